"""`mpcbandit bench o3m-table-c3` and `o3m-round-time`: every method of Table C.3 computes the
statistic (O3M exactly, DP with its noise) and O3M's real processes take the plaintext arms."""

import csv

from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.experiments.o3m_table_c3 import measure_setting
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out


def test_table_c3_small_setting_times_every_method_and_o3m_is_exact():
    # exact truncation: the engine's default (local) has rare wrap failures, a test must not flake
    r = measure_setting("small", repeats=1, he_rows=1, he=True, mpc_trunc="exact")
    assert r["o3m_error"] < 1e-9 and r["dp_error"] > 1e-3
    assert r["o3m_per_participant_error"] < 1e-9  # the paper's shape computes the same values
    assert min(r["o3m_s"], r["dp_s"], r["he_s"], r["mpc_s"]) > 0
    assert r["o3m_per_participant_s"] > 0 and r["dp_per_participant_s"] > 0
    assert r["mpc_error"] < 1e-4  # fixed point with 20 fractional bits
    assert "extrapolated" in r["he_note"]


def _bench(tmp_path, name, *args) -> list[dict]:
    result = CliRunner().invoke(main, ["bench", name, *args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    stem = name.removeprefix("o3m-").replace("-", "_")
    assert (tmp_path / f"{stem}.md").is_file()
    with (tmp_path / f"{stem}.csv").open() as f:
        return list(csv.DictReader(f))


def test_table_c3_command_writes_both_settings_with_the_papers_seconds_beside_ours(tmp_path):
    small, large = _bench(tmp_path, "o3m-table-c3", "--no-he", "--repeats", "1",
                          "--mpc-trunc", "exact")
    assert (small["setting"], large["setting"]) == ("small", "large")
    assert small["he_s"] == "" and small["paper_o3m_s"] == "0.006" and large["paper_he_s"] == ""
    assert float(small["o3m_error"]) < 1e-9 and float(large["o3m_error"]) < 1e-9


def test_round_time_runs_real_processes_with_the_plaintext_arms(tmp_path):
    (r,) = _bench(tmp_path, "o3m-round-time", "--iterations", "10")
    assert r["parties"] == "7" and r["same_arms"] == "True"
    assert float(r["rounds_per_iteration"]) == 2.2
    assert (tmp_path / "linucb-secure" / "summary.json").is_file()


def test_round_time_names_an_unknown_algorithm(tmp_path):
    result = CliRunner().invoke(main, ["bench", "o3m-round-time", "--algorithms", "linucb,ucb",
                                       "--out", str(tmp_path)])
    assert result.exit_code != 0 and "unknown ucb (allowed: linucb, lints)" in result.output
