"""scripts/reproduce.py: every row reads back its own script's output, and a failed row is named."""

import json
import subprocess
import sys
from pathlib import Path

from conftest import load_script

from deadlines import deadline
from mpcbandit.experiments import BENCHES, FIGURES
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

reproduce = load_script("reproduce")


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "scripts/reproduce.py", "--out", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=deadline(600))


def test_every_row_has_a_script_and_both_sizes():
    keys = [r.key for r in reproduce.ROWS]
    assert len(keys) == len(set(keys))
    for row in reproduce.ROWS:
        if row.script.startswith("mpcbandit "):  # a command: it must be registered
            group, name = row.script.split()[1:]
            assert name in {"bench": BENCHES, "figure": FIGURES}[group], row.key
        else:
            assert (reproduce.SCRIPTS / row.script).exists(), row.key
        assert row.paper in reproduce.PAPERS and row.quick_size and row.full_size
        assert reproduce.row_numbers(row, Path("/nonexistent"))[1] == "", row.key  # nothing read: nothing claimed


def test_a_row_run_through_the_entry_point_puts_both_numbers_in_the_page(tmp_path):
    done = _run(tmp_path, "--quick", "--only", "o3m-c3")
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "o3m-c3" / "row.json").read_text())
    assert meta["exit"] == 0 and meta["tier"] == "quick" and meta["seconds"] > 0
    page = (tmp_path / "reproduction.md").read_text()
    (line,) = [ln for ln in page.splitlines() if ln.startswith("| Table C.3")]
    paper, ours = line.split(" | ")[2], line.split(" | ")[4]
    assert "large: O3M 7.28 s" in paper  # the paper's column, read from the CSV
    assert ours.startswith("small: O3M ") and "growth O3M" in ours
    assert "*not run*" in page  # the other rows, listed


def test_a_row_that_times_out_is_named_and_the_page_still_written(tmp_path):
    done = _run(tmp_path, "--quick", "--only", "o3m-c3", "--timeout", "0.01")
    assert done.returncode == 1 and "o3m-c3" in done.stderr
    assert json.loads((tmp_path / "o3m-c3" / "row.json").read_text())["exit"] == "timeout"
    assert "*no output* (exit timeout" in (tmp_path / "reproduction.md").read_text()


def test_a_spread_is_shown_only_where_runs_gave_one():
    eta_rows = [{"T": "1000", "eta": "4.6", "average_reward": "0.51", "std": "0.012"},
                {"T": "1000", "eta": "inf", "average_reward": "0.47", "std": "0.0"}]
    expected = "T = 1000: best η 4.6 (0.510 ± 0.012), η = ∞ 0.470"
    assert reproduce.ours_hannun_2(eta_rows) == expected
    eta_rows[1]["average_reward"] = "0.52"
    assert reproduce.ours_hannun_2(eta_rows) == (
        "T = 1000: best η = ∞ (0.520), next η 4.6 (0.510 ± 0.012), below it")
    ctr = [{"panel": "criteo_relative_ctr", "algorithm": "linucb", "partial_ratio": p, "t": "",
            "mean": m, "std": s} for p, m, s in (("0.2", "0.99", "0.22"), ("1.0", "1.03", "nan"))]
    assert reproduce.ours_o3m_6(ctr) == "Criteo relative CTR: 20 % 0.99 ± 0.22, O3M 1.03"


def test_a_greedy_best_names_the_nearest_exploring_eta_and_whether_it_is_within_noise():
    eta_rows = [{"T": "60000", "eta": "6.9", "average_reward": "0.833", "std": "0.005"},
                {"T": "60000", "eta": "9.2", "average_reward": "0.835", "std": "0.006"},
                {"T": "60000", "eta": "inf", "average_reward": "0.836", "std": "0.007"}]
    assert reproduce.ours_hannun_2(eta_rows) == (
        "T = 60000: best η = ∞ (0.836 ± 0.007), next η 9.2 (0.835 ± 0.006), within one std")


def test_a_feducb_row_says_where_each_private_curve_stops_learning_and_its_regularizer():
    def series(schedule, noise, regrets, rho, bonus):
        return [{"schedule": schedule, "noise": noise, "sync_rounds": "3", "t": str(t),
                 "per_agent_regret": str(r), "random_per_agent_regret": "9", "rho_min": rho,
                 "ucb_bonus_bound": bonus} for t, r in zip((1, 10, 20, 30), regrets)]
    rows = (series("mlogt", "gaussian", (1, 5, 9.5, 10), "5532.4", "0.00134")
            + series("mlogt", "none", (1, 1, 1, 1), "1.0", "0.1"))
    assert reproduce.learned_by(rows, schedule="mlogt", noise="gaussian") == 20
    text = reproduce.ours_feducb_b(rows)
    assert text.endswith("private: 90 % of the regret by t = 20 (O(M log T)); "
                         "ρ_min 5,532 (O(M log T)); UCB bonus ≤ 0.0013 (gaps ≥ 0.1)")
    for r in rows:  # a table written before these columns still reads
        del r["rho_min"], r["ucb_bonus_bound"]
    assert reproduce.ours_feducb_b(rows).endswith("random 9")
