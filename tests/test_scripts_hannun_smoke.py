"""Every hannun script runs at a tiny size and writes its CSV (and PNG when matplotlib is there)."""

import csv
import subprocess
import sys
from pathlib import Path

import pytest


def _run(tmp_path: Path, *args: str) -> None:
    subprocess.run([sys.executable, *args, "--out", str(tmp_path)], check=True,
                   capture_output=True, timeout=300)


def _rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_bench_hannun_tiny(tmp_path):
    _run(tmp_path, "scripts/bench_hannun.py", "--arms", "3", "--nets", "none", "--iterations", "4")
    (row,) = _rows(tmp_path / "bench_hannun.csv")
    assert row["arms"] == "3" and float(row["agreement"]) == 1.0
    assert float(row["rounds_per_iteration"]) > 0 and float(row["online_kb_sent"]) > 0


@pytest.mark.parametrize("fig,size,points", [("1", ["--steps", "100", "--runs", "2"], 4 * 50),
                                             ("2", ["--sizes", "20,40", "--runs", "1"], 2 * 9),
                                             ("5", ["--steps", "40", "--runs", "1"], 2 * 9)])
def test_reward_figures_write_their_table_in_csv_and_markdown(tmp_path, fig, size, points):
    _run(tmp_path, "-m", "mpcbandit", "figure", f"hannun-{fig}", *size, "--data", "synthetic")
    rows = _rows(tmp_path / f"hannun_fig{fig}.csv")
    assert len(rows) == points          # fig 1: 50 samples per ε; figs 2, 5: nine ε per curve
    assert all(0.0 <= float(r["average_reward"]) <= 1.0 for r in rows)
    assert (tmp_path / f"hannun_fig{fig}.md").read_text().count("\n|") == points + 2  # header, rule, rows


def test_membership_figure_tiny(tmp_path):
    _run(tmp_path, "scripts/hannun_fig_membership.py", "--steps", "60", "--runs", "1",
         "--sample", "20", "--data", "synthetic")
    rows = _rows(tmp_path / "hannun_fig6.csv")
    assert {r["epsilon"] for r in rows} == {"0.0", "0.01", "0.1", "0.5"}
    assert all(-1.0 <= float(r["advantage"]) <= 1.0 for r in rows)


@pytest.mark.parametrize("fig,extra,points", [("fig3", ["--arms", "3"], 1),
                                              ("fig4", ["--arms", "3", "--parties", "3"], 1),
                                              ("fig7", ["--values", "16"], 2),
                                              ("fig8", ["--values", "2"], 2)])
def test_secure_figures_tiny(tmp_path, fig, extra, points):
    _run(tmp_path, "scripts/hannun_fig_secure.py", fig, "--steps", "3", "--data", "synthetic", *extra)
    rows = _rows(tmp_path / f"hannun_{fig}.csv")
    assert len(rows) == points  # figs 7 and 8: one line per truncation / Newton start
    if fig in ("fig7", "fig8"):
        assert len({r["variant"] for r in rows}) == 2
        assert all(float(r["agreement"]) == 1.0 for r in rows)
