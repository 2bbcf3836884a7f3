"""Comp, played as curious with nothing but its own view, follows arms across SAMBA steps and
reads off the rewards when an algorithm's score is the empirical mean (a limit of the paper's
design, docs/samba.md); where every score changes each step (UCB's bonus, Thompson's fresh
samples) the same attack reads nothing."""

import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.experiments import samba_comp_tracking as tracking

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out


@pytest.mark.parametrize("algorithm", ["epsilon-greedy", "softmax", "pursuit"])
def test_comp_reads_the_rewards_of_mean_score_algorithms(algorithm):
    r = tracking.measure(algorithm, budget=600, arms=5)
    assert r["read"] >= 0.6 * r["pairs"], r          # most consecutive exploit steps
    assert r["accuracy"] >= 0.99, r                  # and nearly every reward right
    assert r["accuracy"] >= r["chance"] + 0.15, r    # far above the best constant guess


@pytest.mark.parametrize("algorithm", ["ucb", "thompson"])
def test_the_same_attack_reads_nothing_when_every_score_moves(algorithm):
    r = tracking.measure(algorithm, budget=300, arms=5)
    assert r["pairs"] > 250 and r["read"] == 0, r


def test_the_reading_is_the_score_moving_up_or_down():
    # Comp's two views: last step's (arm 2 pulled at position 1), this step's in a new order,
    # everything scaled by a new mask; the pulled arm's mean went from 0.5 to 0.6
    prev = [3.0 * v for v in (0.2, 0.5, 0.9, 0.4)]
    cur = [7.0 * v for v in (0.9, 0.2, 0.4, 0.6)]
    assert tracking.infer_reward(prev, 1, cur, log_scores=False) == 1
    cur_down = [7.0 * v for v in (0.9, 0.2, 0.4, 0.45)]
    assert tracking.infer_reward(prev, 1, cur_down, log_scores=False) == 0
    # log-domain scores: the mask is an offset
    assert tracking.infer_reward([v + 2.0 for v in (0.2, 0.5, 0.9, 0.4)], 1,
                                 [v - 5.0 for v in (0.9, 0.2, 0.4, 0.6)], log_scores=True) == 1
    # two scores moved: Comp cannot tell which arm was pulled
    assert tracking.infer_reward(prev, 1, [7.0 * v for v in (0.95, 0.2, 0.4, 0.6)], False) is None


def test_the_bench_writes_comp_s_reading_per_algorithm(tmp_path):
    result = CliRunner().invoke(main, ["bench", "samba-comp-tracking", "--budget", "200",
                                       "--algorithms", "epsilon-greedy,ucb",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = (tmp_path / "samba_comp_tracking.csv").read_text().splitlines()
    assert rows[0] == "algorithm,pairs,read,right,accuracy,chance"
    greedy, ucb = (r.split(",") for r in rows[1:])
    assert greedy[0] == "epsilon-greedy" and int(greedy[2]) > 0 and float(greedy[4]) >= 0.99
    assert ucb[0] == "ucb" and ucb[2] == "0" and ucb[4] == ""  # nothing read, no rate stated
