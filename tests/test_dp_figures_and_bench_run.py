"""The DP figures and benchmark run at a tiny size and write their tables (CSV and markdown)."""

import csv
from pathlib import Path
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out


def _rows(path: Path) -> list[list[str]]:
    with path.open() as f:
        return list(csv.reader(f))


def test_figure_feducb_writes_all_three_panels(cli, tmp_path):
    out = cli("figure", "feducb", "--out", tmp_path, "--horizon", "12", "--agents", "2,3",
              "--agents-bc", "2", "--dims-c", "2").stdout
    assert "per-agent regret" in out
    assert len(_rows(tmp_path / "fig1a_regret_vs_eps.csv")) == 1 + 2 * 6
    assert len(_rows(tmp_path / "fig1b_communication.csv")) == 1 + 6 * 12
    assert _rows(tmp_path / "fig1c_dimension.csv")[1][0] == "2"
    for stem in ("fig1a_regret_vs_eps", "fig1b_communication", "fig1c_dimension"):
        md = (tmp_path / f"{stem}.md").read_text().splitlines()
        # the markdown table holds the CSV's rows: a title, a blank, the header, a rule, the rows
        table = [line for line in md if line.startswith("|")]
        assert md[0].startswith("# ") and len(table) == 2 + len(_rows(tmp_path / f"{stem}.csv")) - 1
        assert any(line.startswith("Computed by:") for line in md)  # where the numbers come from


def test_figure_jdp_writes_the_experiment_and_the_sweep(cli, tmp_path):
    cli("figure", "jdp", "--out", tmp_path, "--horizon", "15", "--eps-horizon", "15", "--runs", "2",
        "--eps", "1,100", "--jobs", "1")
    rows = _rows(tmp_path / "jdp_regret_vs_eps.csv")
    assert rows[0][:6] == ["epsilon", "gaussian", "wishart", "shifted_wishart", "non_private", "random"]
    assert len(rows) == 3
    curves = _rows(tmp_path / "jdp_experiment.csv")
    # two gaps x (random + four learners) x 15 steps, every value finite
    assert len(curves) == 1 + 2 * 5 * 15
    assert {r[1] for r in curves[1:]} == {"random", "none", "gaussian", "wishart", "shifted-wishart"}
    assert all(float(r[3]) >= 0 for r in curves[1:])


def test_bench_dp_processes_runs_every_protocol_as_processes(cli, tmp_path):
    out = cli("bench", "dp-processes", "--agents", "2", "--horizon", "5", "--out", tmp_path).stdout
    rows = _rows(tmp_path / "bench_dp_processes.csv")
    assert [r[0] for r in rows[1:]] == ["jdp", "feducb-central", "feducb-p2p-ring"]
    assert [r[2] for r in rows[1:]] == ["3", "3", "2"]  # processes
    assert "load average" in out
    assert "load" in (tmp_path / "bench_dp_processes.md").read_text().splitlines()[0]
