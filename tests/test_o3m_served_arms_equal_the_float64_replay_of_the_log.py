"""An O3M service of real processes batches concurrent decisions and applies rewards that come
late, shuffled or never; every arm the AP served equals the float64 replay of its log on the
unmasked contexts (`mpcbandit serve-replay`), 100 %, and |theta| to 1e-12 (O3M is lossless);
a batch of any size takes one round trip; SIGTERM answers the decisions in flight and exits 0."""

import numpy as np
import pytest

from o3m_serve_service import AP, PASSIVE, O3mApps, o3m_service
from serve_service import (applied_rewards, decide_in_waves, records, replay,
                           stop_amid_decisions)
from serve_support import wait_for


@pytest.mark.parametrize("algorithm", ["linucb", "lints"])
def test_o3m_batched_decisions_and_late_shuffled_missing_rewards_equal_the_replay(
        tmp_path, algorithm):
    out = tmp_path / "svc"
    svc = o3m_service(out, f"o3m.algorithm={algorithm}", "serve.checkpoint_every=5")
    apps = O3mApps(svc)
    ids = [f"u{k}" for k in range(120)]
    try:
        decide_in_waves(apps, ids, np.random.default_rng(1), workers=16)
        unrewarded = [i for i in ids if i not in apps.acked["rewards"]][:15]   # never rewarded
        rest = [i for i in ids if i not in apps.acked["rewards"] and i not in unrewarded]
        assert [apps.reward(i)[0] for i in rest] == [202] * len(rest)
        wait_for(lambda: sorted(applied_rewards(out, AP)) == sorted(apps.acked["rewards"]),
                 "every acknowledged reward applied")
        # a batch of any size takes one round trip: the AP's request, each PP's answer
        for party, rounds in ((AP, 2), (PASSIVE[0], 1)):
            runs = svc.metric(party, 'mpcbandit_op_runs_total{op="decide"}')
            total = svc.metric(party, 'mpcbandit_op_rounds_total{op="decide"}')
            assert runs >= 3 and total == rounds * runs, (party, runs, total)
        # the AP splits each answered decision's time into its stages
        answered = svc.metric(AP, "mpcbandit_decisions_total")
        for name in ("queued", "words", "rounds", "log"):
            count = svc.metric(AP, f'mpcbandit_decision_stage_seconds_count{{stage="{name}"}}')
            assert count == answered, name
        # decisions still in flight when SIGTERM comes are answered, then every party drains
        code = stop_amid_decisions(apps, [f"t{k}" for k in range(12)])
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    assert code == 0
    ops = records(out, AP, "ops.wal")
    assert max(len(op["ids"]) for op in ops if op["kind"] == "decide") > 1, \
        "no decision batch held more than one request"
    # rewards are applied in the order the AP logged them
    assert applied_rewards(out, AP) == [r["id"] for r in records(out, AP) if r["kind"] == "reward"]
    report = replay(out)
    assert report["decisions"] == len(apps.acked["decisions"]) >= 120
    assert report["disagree"] == [] and report["near_ties"] == [] and report["agreement"] == 1.0
    assert report["rewards"] == len(apps.acked["rewards"])
    assert report["theta_norm_gap"] < 1e-12
