"""A service of real processes batches concurrent decisions and applies rewards that come late,
shuffled or never; every arm it served equals the float64 replay of its own log
(`mpcbandit serve-replay`), 100 %; SIGTERM answers the decisions in flight and exits 0."""

import math

import numpy as np

from serve_service import (ARMS, HOLDERS, PULLER, Apps, Service, applied_rewards,
                           decide_in_waves, records, replay, stop_amid_decisions)
from serve_support import wait_for


def test_batched_decisions_and_late_shuffled_missing_rewards_equal_the_replay(tmp_path):
    svc = Service(tmp_path / "svc", "serve.checkpoint_every=5")
    apps = Apps(svc)
    rng = np.random.default_rng(1)
    ids = [f"u{k}" for k in range(160)]
    try:
        decide_in_waves(apps, ids, rng, workers=24)
        unrewarded = [i for i in ids if i not in apps.acked["rewards"]][:20]  # never rewarded
        rest = [i for i in ids if i not in apps.acked["rewards"] and i not in unrewarded]
        assert [apps.reward(i)[0] for i in rest] == [202] * len(rest)
        wait_for(lambda: sorted(applied_rewards(tmp_path / "svc")) == sorted(
            apps.acked["rewards"]), "every acknowledged reward applied")
        # a batch of any size takes one decision's rounds: 4 + the argmax's 7 + ceil(log2(A-1))
        rounds = svc.metric(HOLDERS[0], 'mpcbandit_op_rounds_total{op="decide"}')
        runs = svc.metric(HOLDERS[0], 'mpcbandit_op_runs_total{op="decide"}')
        assert runs >= 4 and rounds == runs * (11 + math.ceil(math.log2(ARMS - 1)))
        # p' splits each answered decision's time into its stages, within its latency
        answered = svc.metric(PULLER, "mpcbandit_decisions_total")
        stage = 'mpcbandit_decision_stage_seconds_{}{{stage="{}"}}'
        for name in ("queued", "words", "rounds", "log"):
            assert svc.metric(PULLER, stage.format("count", name)) == answered, name
        spent = [svc.metric(PULLER, stage.format("sum", s)) for s in ("words", "rounds")]
        assert all(s > 0 for s in spent)
        assert sum(spent) < svc.metric(PULLER, "mpcbandit_decision_latency_seconds_sum")
        # decisions still in flight when SIGTERM comes are answered, then every party drains
        code = stop_amid_decisions(apps, [f"t{k}" for k in range(16)])
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    assert code == 0
    sizes = [len(op["ids"]) for op in records(tmp_path / "svc", PULLER, "ops.wal")
             if op["kind"] == "decide"]
    assert max(sizes) > 1, "no decision batch held more than one request"
    report = replay(tmp_path / "svc")
    assert report["decisions"] == len(apps.acked["decisions"]) >= 160
    assert report["disagree"] == [] and report["agreement"] == 1.0
