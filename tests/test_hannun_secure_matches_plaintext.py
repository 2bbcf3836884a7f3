import json
import subprocess
import sys

import numpy as np
import pytest
from deadlines import deadline
from hannun_inproc import run_hannun

from mpcbandit.data import data_root
from mpcbandit.protocols.hannun.reference import replay

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

HAVE_MNIST = (data_root() / "mnist" / "train-images-idx3-ubyte.gz").exists()


def test_cli_real_processes_pick_the_plaintext_arms_within_the_round_and_byte_budget(tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "mpcbandit", "run", "configs/hannun-synthetic.toml",
                    "--out", str(out), "--set", "hannun.iterations=60",
                    "--set", 'hannun.exploration="seeded"'], check=True,
                   capture_output=True, timeout=deadline(300))
    s = json.loads((out / "summary.json").read_text())
    assert len(s["series"]["arms"]) == 60 and len(s["parties"]) == 6
    assert s["agreement_with_replay"] >= 0.999
    assert s["cumulative_reward"] == s["replay_cumulative_reward"]
    # the schedule (linear start, exact truncation): 1 prefix + [1 score (u's truncation in
    # its round) + argmax 7 + 4 + open 1 + o_t, r_t 1] + 1 update (o_a r_t x_t with it), plus
    # the first context
    assert s["critical_rounds_per_step"] == pytest.approx(16 + 1 / 60)
    assert s["online_bytes_per_step_feature_holder"] <= 150_000
    assert {p["role"] for p in s["parties"]} == {"feature_holder", "arm_puller", "reward_holder", "dealer",
                                             "environment"}
    assert len({p["pid"] for p in s["parties"]}) == 6


# the fidelity thresholds below hold for the seed's own near-ties; a secret stream meets new
# ones each run (hannun_inproc.SECRET_AGREEMENT)
SEEDED = "hannun.exploration=seeded"


def dealer_key(results) -> bytes:
    """The secret exploration key the dealer revealed in its result after the run."""
    return bytes.fromhex(results["dealer.0"]["exploration_key"])


@pytest.mark.parametrize("overrides", [
    ["hannun.iterations=300", "hannun.epsilon=0.2", "hannun.arms=5", "hannun.dims=8", "seed=3"],
    ["hannun.iterations=40", "hannun.feature_holders=3", "hannun.dims=9", "seed=4"],
    ["hannun.iterations=40", "hannun.reinvert_every=10", "hannun.regularizer=0.5", "seed=5"],
    pytest.param(["hannun.iterations=40", "hannun.data=kmeans", "hannun.arms=12", "seed=6"],
                 marks=pytest.mark.skipif(not HAVE_MNIST, reason="MNIST not found")),
], ids=["two-holders-300-steps", "three-holders-paper-truncation", "reinversion-and-regularizer",
        "kmeans-bernoulli-rewards"])
def test_inprocess_secure_run_equals_plaintext(overrides):
    cfg, results, _, _ = run_hannun(overrides + [SEEDED])
    arms = np.array(results["arm_puller.0"]["arms"])
    ref = np.array(replay(cfg, dealer_key(results))["series"]["arms"])
    assert len(arms) == cfg.section.iterations
    assert np.mean(arms == ref) >= 0.999


@pytest.mark.parametrize("init,arms,sets,rounds", [
    # exact truncation (the default): u's truncation inside the score's and x^T u's rounds,
    # one round after each other truncated product
    ("paper", 10, ["hannun.newton_iterations=7"], 41),  # the reciprocal chain is the longest:
    # 1 + [1 + 1 + exp (1 + 8 x 2) + Newton (7 + 2) x 2 + 2] + 1
    ("linear", 10, [], 16),  # 1 + [1 + argmax 7+ceil(log2 9) + open 1 + o_t, r_t 1] + 1, and
    # the Newton chain 1 + [1 + 1 + (3 + 2) x 2 + q u u^T 1 + 1] + 1 as long
    ("linear", 5, [], 16),   # the Newton chain (the select chain is 2 shorter)
    ("linear", 10, ["hannun.precision_bits=22"], 16),  # q u u^T at 3L > 62 bits: u u^T first
    ("linear", 10, ["hannun.trunc=local"], 16),   # no truncation round: the select chain
])
def test_rounds_per_step_follow_the_schedule(init, arms, sets, rounds):
    steps = 12
    cfg, results, _, chans = run_hannun([SEEDED, f"hannun.iterations={steps}",
                                         f"hannun.reciprocal_init={init}", f"hannun.arms={arms}",
                                         "hannun.dims=6", "seed=7", *sets])
    assert results["arm_puller.0"]["arms"] == replay(cfg, dealer_key(results))["series"]["arms"]
    online = results["feature_holder.0"]["online"]
    assert online["rounds"] == rounds * steps + 1  # + sharing the first context
    assert chans["feature_holder.1"].stats.op("hannun").rounds == rounds * steps + 1
