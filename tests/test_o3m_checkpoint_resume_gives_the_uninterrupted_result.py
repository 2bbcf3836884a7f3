"""O3M (LinUCB and LinTS) killed half-way and resumed from its checkpoints ends with exactly the
arms, rewards and regret of an uninterrupted run at the same seed; the mask generator, whose
part ends after round 0, resumes as finished and the participants keep their mask blocks."""

import json

import pytest

from deadlines import deadline
from partyprocs import assert_same_cost_per_step, kill_and_resume

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

EVERY = 25
ROUNDS = 200  # > 2 x WINDOW_ROUNDS, so go-aheads are due on both sides of the resume point


def settings(algorithm, seed=3):
    # the emulated 3 ms hop keeps the run under way while progress shows the kill point (no
    # probes of the duration first: what is checked is the resume)
    return ["--no-estimate", "--seed", str(seed), "--set", f"o3m.iterations={ROUNDS}",
            "--set", f"o3m.algorithm=\"{algorithm}\"", "--set", f"run.deadline_s={deadline(15):g}",
            "--set", "run.net={one_way_ms = 3.0}"]


@pytest.mark.parametrize("algorithm, victim", [("linucb", "ap.0"), ("lints", "pp.2")])
def test_killed_o3m_run_resumes_to_the_uninterrupted_result(cli, tmp_path, algorithm, victim):
    out = tmp_path / "run"
    resumed = kill_and_resume(cli, "configs/o3m-synthetic.toml", settings(algorithm), out, victim,
                              every=EVERY, kill_after=75)
    assert (out / "checkpoints" / "pmg.0" / "finished.ckpt").exists()
    assert 75 <= resumed["resumed_from"] < ROUNDS and resumed["resumed_from"] % EVERY == 0

    cli("run", "configs/o3m-synthetic.toml", "--out", tmp_path / "whole", *settings(algorithm))
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert len(resumed["series"]["arms"]) == ROUNDS
    for key in ("arms", "rewards", "regret"):
        assert resumed["series"][key] == whole["series"][key], key
    assert resumed["cumulative_reward"] == whole["cumulative_reward"]
    # the resumed run goes on under the first run's mask, the other under a fresh one:
    # norms agree up to rounding
    assert resumed["series"]["theta_norm"] == pytest.approx(whole["series"]["theta_norm"], rel=1e-9)
    assert_same_cost_per_step(resumed, whole)
