"""Smoke test of the SAMBA Figure 8 benchmark and its plot, at a tiny size."""

from __future__ import annotations

import csv

import pytest

from conftest import load_script


@pytest.mark.slow
def test_bench_samba_writes_the_three_tables_beside_the_relay_floor_and_the_figure(tmp_path, capsys):
    bench = load_script("bench_samba")
    assert bench.main(["--datasets", "synthetic", "--algorithms", "epsilon-greedy",
                       "--n-list", "30", "--k-list", "3", "--k-max", "3", "--n-for-k", "30",
                       "--reward-n", "50", "--paillier-bits", "256", "--out", str(tmp_path)]) == 0
    with (tmp_path / "times.csv").open() as f:
        (row,) = list(csv.DictReader(f))
    assert (row["N"], row["K"]) == ("30", "3") and float(row["ms_per_step"]) > 0
    # the floor and the paper's quantity are measured beside it, in the same run
    assert float(row["relay_ms_per_step"]) > 0 and float(row["one_process_ms_per_step"]) > 0
    assert float(row["vs_relay"]) == pytest.approx(float(row["ms_per_step"]) / float(row["relay_ms_per_step"]))
    with (tmp_path / "shares.csv").open() as f:
        assert {r["role"] for r in csv.DictReader(f)} == {"controller", "comp", "do", "dc"}
    with (tmp_path / "rewards.csv").open() as f:
        assert [int(r["N"]) for r in csv.DictReader(f)][-1] == 50
    assert "Figure 8 (d)" in capsys.readouterr().out
    pytest.importorskip("matplotlib")
    png = load_script("plot_samba_figure8").plot(tmp_path, tmp_path / "fig.png")
    assert png.stat().st_size > 1000


def test_bench_zmq_relay_times_a_tiny_relay():
    relay = load_script("bench_zmq_relay")
    assert relay.relay_ms_per_step(arms=3, steps=20) > 0
