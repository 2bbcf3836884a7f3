"""An O3M service of real processes batches concurrent decisions and applies rewards that come
late, shuffled or never; every arm the AP served equals the float64 replay of its log on the
unmasked contexts (`mpcbandit serve-replay`), 100 %, and |theta| to 1e-12 (O3M is lossless);
SIGTERM answers the decisions in flight and exits 0."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from o3m_serve_service import AP, PASSIVE, O3mApps, o3m_service
from serve_service import records, replay
from serve_support import wait_for


def _applied(out) -> list[str]:
    return [i for op in records(out, AP, "ops.wal") if op["kind"] == "update" for i in op["ids"]]


@pytest.mark.parametrize("algorithm", ["linucb", "lints"])
def test_o3m_batched_decisions_and_late_shuffled_missing_rewards_equal_the_replay(
        tmp_path, algorithm):
    out = tmp_path / "svc"
    svc = o3m_service(out, f"o3m.algorithm={algorithm}", "serve.checkpoint_every=5")
    apps = O3mApps(svc)
    rng = np.random.default_rng(1)
    ids = [f"u{k}" for k in range(120)]

    def one(rid):
        apps.contexts(rid)
        return apps.decide(rid)[0]

    try:
        with ThreadPoolExecutor(16) as pool:
            for wave in range(3):   # rewards of a wave come during the next, shuffled
                chunk = ids[40 * wave:40 * (wave + 1)]
                assert list(pool.map(one, chunk)) == [200] * len(chunk)
                late = [i for i in ids[:40 * wave] if rng.random() < 0.5
                        and i not in apps.acked["rewards"]]
                rng.shuffle(late)
                assert [apps.reward(i)[0] for i in late] == [202] * len(late)
        unrewarded = [i for i in ids if i not in apps.acked["rewards"]][:15]   # never rewarded
        rest = [i for i in ids if i not in apps.acked["rewards"] and i not in unrewarded]
        assert [apps.reward(i)[0] for i in rest] == [202] * len(rest)
        wait_for(lambda: sorted(_applied(out)) == sorted(apps.acked["rewards"]),
                 "every acknowledged reward applied")
        # a batch of any size takes one decision's rounds: the AP's request, each PP's answer
        for party, rounds in ((AP, 2), (PASSIVE[0], 1)):
            runs = svc.metric(party, 'mpcbandit_op_runs_total{op="decide"}')
            total = svc.metric(party, 'mpcbandit_op_rounds_total{op="decide"}')
            assert runs >= 3 and total == rounds * runs, (party, runs, total)
        # decisions still in flight when SIGTERM comes are answered, then every party drains
        with ThreadPoolExecutor(8) as pool:
            tail = [f"t{k}" for k in range(12)]
            for rid in tail:
                apps.contexts(rid)
            answers = pool.map(apps.decide, tail)
            code = svc.stop()
            assert {a[0] for a in answers} <= {200, 503}
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    assert code == 0
    ops = records(out, AP, "ops.wal")
    assert max(len(op["ids"]) for op in ops if op["kind"] == "decide") > 1, \
        "no decision batch held more than one request"
    # rewards are applied in the order the AP logged them
    logged = [r["id"] for r in records(out, AP) if r["kind"] == "reward"]
    assert _applied(out) == logged
    report = replay(out)
    assert report["decisions"] == len(apps.acked["decisions"]) >= 120
    assert report["disagree"] == [] and report["near_ties"] == [] and report["agreement"] == 1.0
    assert report["rewards"] == len(apps.acked["rewards"])
    assert report["theta_norm_gap"] < 1e-12
