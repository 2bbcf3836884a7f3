"""Every Hannun figure and the Hannun bench run at a tiny size through the CLI and write their
tables (CSV beside markdown) with the quantities the paper plots."""

import csv
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpcbandit.cli import main

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out


def _invoke(tmp_path: Path, *args: str) -> None:
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output


def _rows(path: Path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_bench_hannun_measures_the_secure_run_beside_its_float64_reference(tmp_path):
    _invoke(tmp_path, "bench", "hannun", "--arms", "3", "--nets", "none", "--iterations", "4")
    (row,) = _rows(tmp_path / "bench_hannun.csv")
    assert row["arms"] == "3" and float(row["agreement"]) == 1.0
    assert float(row["rounds_per_iteration"]) > 0 and float(row["online_kb_sent"]) > 0
    assert float(row["plaintext_ms_per_iteration"]) > 0
    assert float(row["slowdown"]) == pytest.approx(
        float(row["ms_per_iteration"]) / float(row["plaintext_ms_per_iteration"]), rel=0.01, abs=1)
    assert (tmp_path / "a3-p2-none" / "summary.json").is_file()


@pytest.mark.parametrize("fig,size,points", [("1", ["--steps", "100", "--runs", "2"], 4 * 50),
                                             ("2", ["--sizes", "20,40", "--runs", "2"], 2 * 9),
                                             ("5", ["--steps", "40", "--runs", "2"], 2 * 9)])
def test_reward_figures_write_their_mean_and_spread_over_runs(tmp_path, fig, size, points):
    _invoke(tmp_path, "figure", f"hannun-{fig}", *size, "--data", "synthetic")
    rows = _rows(tmp_path / f"hannun_fig{fig}.csv")
    assert len(rows) == points          # fig 1: 50 samples per ε; figs 2, 5: nine ε per curve
    assert all(0.0 <= float(r["average_reward"]) <= 1.0 for r in rows)
    # the spread over the 2 runs: zero for none of the curves (the seeds differ)
    assert all(float(r["std"]) >= 0 for r in rows) and any(float(r["std"]) > 0 for r in rows)
    # under the title: the header, the rule and a line per row
    assert (tmp_path / f"hannun_fig{fig}.md").read_text().count("\n|") == points + 2


def test_membership_figure_writes_an_advantage_per_epsilon_and_checkpoint(tmp_path):
    _invoke(tmp_path, "figure", "hannun-6", "--steps", "60", "--runs", "2", "--sample", "20",
            "--data", "synthetic")
    rows = _rows(tmp_path / "hannun_fig6.csv")
    assert {r["epsilon"] for r in rows} == {"0.0", "0.01", "0.1", "0.5"}
    assert len(rows) == 4 * 6  # six checkpoints per ε
    assert all(-1.0 <= float(r["advantage"]) <= 1.0 and float(r["std"]) >= 0 for r in rows)


@pytest.mark.parametrize("fig,extra,points", [("3", ["--arms", "3", "--parties", "2"], 1),
                                              ("4", ["--arms", "3", "--parties", "2,3"], 2),
                                              ("7", ["--values", "16"], 2),
                                              ("8", ["--values", "2"], 2)])
def test_secure_figures_run_every_party_and_write_a_row_per_point(tmp_path, fig, extra, points):
    _invoke(tmp_path, "figure", f"hannun-{fig}", "--steps", "3", *extra,
            *(["--data", "synthetic"] if fig in "78" else []))
    rows = _rows(tmp_path / f"hannun_fig{fig}.csv")
    assert len(rows) == points  # figs 7 and 8: one line per truncation / Newton start
    if fig in "78":
        assert len({r["variant"] for r in rows}) == 2
        assert all(float(r["agreement"]) == 1.0 for r in rows)
    else:
        assert all(float(r["seconds_per_iteration"]) > 0 and float(r["rounds_per_iteration"]) > 0
                   for r in rows)


def test_a_figure_names_an_unknown_truncation(tmp_path):
    result = CliRunner().invoke(main, ["figure", "hannun-7", "--trunc", "local,round",
                                       "--out", str(tmp_path)])
    assert result.exit_code != 0 and "unknown round (allowed: local, exact)" in result.output
