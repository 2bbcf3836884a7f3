"""A decision whose reward does not come within serve.reward_timeout_s is closed: no update
(Hannun: the holders drop its [x], p' its arm; O3M: the AP its masked context; in a logged
`drop` op), counted in /metrics; its reward coming later is a 410. Rewards that do come, late or
not, are applied; the arms equal the float64 replay."""

import pytest

from deadlines import deadline
from o3m_serve_service import O3mApps, o3m_service
from serve_service import Apps, Service, records, replay
from serve_support import wait_for


@pytest.mark.parametrize("protocol", ["hannun", "o3m"])
def test_an_unrewarded_decision_is_closed_counted_and_its_late_reward_refused(tmp_path,
                                                                             protocol):
    out = tmp_path / "svc"
    # rewarded at once: within reward_timeout_s of its decision
    closing = f"serve.reward_timeout_s={deadline(3):g}"
    apps = (Apps(Service(out, closing), seed=5) if protocol == "hannun"
            else O3mApps(o3m_service(out, closing), seed=5))
    svc, leader = apps.svc, apps.decider
    try:
        ids = [f"q{k}" for k in range(12)]
        for k, rid in enumerate(ids):
            apps.decided([rid])
            if k < 6:   # rewarded at once; the other six never
                assert apps.reward(rid)[0] == 202
        wait_for(lambda: svc.metric(apps.rewarder, "mpcbandit_rewards_expired_total") >= 6,
                 "the six unrewarded decisions closed", deadline(30))
        status, body = apps.reward(ids[-1])
        assert status == 410 and "serve.reward_timeout_s" in body["error"]
        wait_for(lambda: any(op["kind"] == "drop" for op in records(out, leader, "ops.wal")),
                 f"{leader} dropped the closed decisions")
        for rid in [f"late{k}" for k in range(8)]:   # the model goes on after the drops
            apps.decided([rid])
            assert apps.reward(rid)[0] == 202
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    ops = records(out, leader, "ops.wal")
    dropped = {i for op in ops if op["kind"] == "drop" for i in op["ids"]}
    updated = {i for op in ops if op["kind"] == "update" for i in op["ids"]}
    assert dropped == set(ids[6:]) and not dropped & updated
    assert set(ids[:6]) <= updated
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] == 20
