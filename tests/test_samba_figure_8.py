"""`mpcbandit figure samba-8` at a tiny size: the three tables, the relay floor and the paper's
quantity measured beside every secure point, and the figure; `bench samba-relay` alone."""

from __future__ import annotations

import csv

import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.experiments.samba_relay import relay_ms_per_step


def _rows(path) -> list[dict]:
    with path.open() as f:
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_figure_8_writes_the_three_tables_beside_the_relay_floor_and_the_figure(tmp_path):
    result = CliRunner().invoke(main, [
        "figure", "samba-8", "--datasets", "synthetic", "--algorithms", "epsilon-greedy",
        "--n-list", "30", "--k-list", "3,4", "--k-max", "3", "--n-for-k", "30",
        "--reward-n", "50", "--paillier-bits", "256", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    times = _rows(tmp_path / "times.csv")
    assert [(r["N"], r["K"]) for r in times] == [("30", "3"), ("30", "4")]
    for row in times:
        assert float(row["ms_per_step"]) > 0
        # the floor and the paper's quantity are measured beside it, in the same run
        assert float(row["relay_ms_per_step"]) > 0 and float(row["one_process_ms_per_step"]) > 0
        assert float(row["vs_relay"]) == pytest.approx(
            float(row["ms_per_step"]) / float(row["relay_ms_per_step"]))
    assert {r["role"] for r in _rows(tmp_path / "shares.csv")} == {"controller", "comp", "do", "dc"}
    assert [int(r["N"]) for r in _rows(tmp_path / "rewards.csv")][-1] == 50
    for stem in ("times", "shares", "rewards"):
        assert (tmp_path / f"{stem}.md").is_file()
    pytest.importorskip("matplotlib")
    assert (tmp_path / "samba_fig8_synthetic.png").stat().st_size > 1000


def test_figure_8_names_an_unknown_algorithm(tmp_path):
    result = CliRunner().invoke(main, ["figure", "samba-8", "--algorithms", "ucb,greedy",
                                       "--out", str(tmp_path)])
    assert result.exit_code != 0 and "unknown greedy" in result.output


@pytest.mark.parametrize("connections_per_pair", [1, 2])
def test_samba_relay_times_a_tiny_relay_over_either_topology(connections_per_pair):
    # a lost message would end in the relay's deadline error, not in a time
    assert relay_ms_per_step(arms=3, steps=20, connections_per_pair=connections_per_pair) > 0


def test_a_relay_wait_past_its_deadline_names_what_it_waited_for(monkeypatch):
    import zmq

    from mpcbandit.experiments import samba_relay

    monkeypatch.setattr(samba_relay, "DEADLINE_S", 0.2)
    ctx = zmq.Context()
    try:
        router = samba_relay._router(ctx, "tcp://127.0.0.1:*")
        with pytest.raises(RuntimeError, match="waiting for comp's hello"):
            samba_relay._recv(router, "comp's hello")
    finally:
        ctx.destroy(linger=0)


def test_bench_samba_relay_writes_both_topologies_side_by_side(tmp_path):
    result = CliRunner().invoke(main, ["bench", "samba-relay", "--arms", "2", "--steps", "10",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with open(tmp_path / "samba_relay.csv") as f:
        (row,) = list(csv.DictReader(f))
    one, two = float(row["ms_per_step"]), float(row["two_connections_ms_per_step"])
    assert one > 0 and two > 0 and float(row["two_over_one"]) == pytest.approx(two / one, rel=1e-2)


def test_a_two_connection_relay_names_the_parties_whose_address_never_came(monkeypatch):
    import multiprocessing as mp

    import zmq

    from mpcbandit.experiments import samba_relay

    monkeypatch.setattr(samba_relay, "DEADLINE_S", 0.2)
    found = mp.get_context("spawn").Queue()
    found.put((b"do.0", "tcp://127.0.0.1:1"))  # do.0 reported; comp never does
    ctx = zmq.Context()
    try:
        with pytest.raises(RuntimeError, match=r"no address .* from comp \(their ROUTERs"):
            samba_relay._relay_two_connections(ctx, None, found, [b"do.0", b"comp"], 1)
    finally:
        ctx.destroy(linger=0)
