"""A decision whose reward does not come within serve.reward_timeout_s is closed: no update
(the holders drop its [x], p' its arm, in a logged `drop` op), counted in /metrics; its reward
coming later is a 410. Rewards that do come, late or not, are applied; the arms equal the float64
replay."""

from serve_service import PULLER, REWARD, Apps, Service, records, replay
from serve_support import wait_for


def test_an_unrewarded_decision_is_closed_counted_and_its_late_reward_refused(tmp_path):
    out = tmp_path / "svc"
    svc = Service(out, "serve.reward_timeout_s=3")
    apps = Apps(svc, seed=5)
    try:
        ids = [f"q{k}" for k in range(12)]
        for k, rid in enumerate(ids):
            apps.decided([rid])
            if k < 6:   # rewarded at once; the other six never
                assert apps.reward(rid)[0] == 202
        wait_for(lambda: svc.metric(REWARD, "mpcbandit_rewards_expired_total") >= 6,
                 "the six unrewarded decisions closed", 30)
        status, body = apps.reward(ids[-1])
        assert status == 410 and "serve.reward_timeout_s" in body["error"]
        wait_for(lambda: any(op["kind"] == "drop" for op in records(out, PULLER, "ops.wal")),
                 "p' dropped the closed decisions")
        for rid in [f"late{k}" for k in range(8)]:   # the model goes on after the drops
            apps.decided([rid])
            assert apps.reward(rid)[0] == 202
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    ops = records(out, PULLER, "ops.wal")
    dropped = {i for op in ops if op["kind"] == "drop" for i in op["ids"]}
    updated = {i for op in ops if op["kind"] == "update" for i in op["ids"]}
    assert dropped == set(ids[6:]) and not dropped & updated
    assert set(ids[:6]) <= updated
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] == 20
