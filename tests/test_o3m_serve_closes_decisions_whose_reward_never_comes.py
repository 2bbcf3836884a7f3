"""At the AP of an O3M service, a decision whose reward does not come within
serve.reward_timeout_s is closed: no update (the AP drops its masked context in a logged `drop`
op), counted in /metrics; its reward coming later is a 410. Rewards that do come are applied;
the arms equal the float64 replay."""

from o3m_serve_service import AP, o3m_serving
from serve_service import records, replay
from serve_support import wait_for


def test_an_unrewarded_o3m_decision_is_closed_counted_and_its_late_reward_refused(tmp_path):
    out = tmp_path / "svc"
    with o3m_serving(out, "serve.reward_timeout_s=2", seed=5) as apps:
        svc = apps.svc
        ids = [f"q{k}" for k in range(10)]
        for k, rid in enumerate(ids):
            apps.contexts(rid)
            assert apps.decide(rid)[0] == 200
            if k < 5:   # rewarded at once; the other five never
                assert apps.reward(rid)[0] == 202
        wait_for(lambda: svc.metric(AP, "mpcbandit_rewards_expired_total") >= 5,
                 "the five unrewarded decisions closed", 30)
        status, body = apps.reward(ids[-1])
        assert status == 410 and "serve.reward_timeout_s" in body["error"]
        wait_for(lambda: any(op["kind"] == "drop" for op in records(out, AP, "ops.wal")),
                 "the AP dropped the closed decisions")
        for rid in [f"late{k}" for k in range(6)]:   # the model goes on after the drops
            apps.contexts(rid)
            assert apps.decide(rid)[0] == 200
            assert apps.reward(rid)[0] == 202
        assert svc.stop() == 0
    ops = records(out, AP, "ops.wal")
    dropped = {i for op in ops if op["kind"] == "drop" for i in op["ids"]}
    updated = {i for op in ops if op["kind"] == "update" for i in op["ids"]}
    assert dropped == set(ids[5:]) and not dropped & updated
    assert set(ids[:5]) | {f"late{k}" for k in range(6)} == updated
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] == 16
