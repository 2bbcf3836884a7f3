"""Seconds per round of the DP protocols, every party its own process: `mpcbandit bench dp-processes`."""

from __future__ import annotations

import os

import click

from mpcbandit.experiments.common import (
    Output,
    experiment_command,
    int_list,
    shipped_config,
    sized_option,
)
from mpcbandit.launch import run_local

__all__ = ["bench"]

COLUMNS = ["protocol", "agents", "processes", "T", "wall_s", "protocol_s", "s_per_round",
           "rounds_total", "sync_rounds", "regret_per_agent"]


def _run(config: str, sets: list[str], out) -> dict:
    """One real-process run of a shipped config; its summary."""
    return run_local(shipped_config(config, sets), out, echo=lambda *_: None)


@experiment_command("dp-processes", "M = 10, 20, 50, 100 agents, T = 1000",
                    short_help="Seconds per round of JDP-LinUCB and FedUCB processes")
@sized_option("--agents", int_list, [2, 4, 8], [10, 20, 50, 100], "The values of M.")
@sized_option("--horizon", int, 200, 1000, "T, rounds.")
def bench(out: Output, paper: bool, agents: list[int], horizon: int) -> None:
    """Seconds per round of JDP-LinUCB and FedUCB (centralized and on a P2P ring) with every
    party a real OS process, as `mpcbandit run` starts them.

    For each M: centralized FedUCB (controller + M agents), P2P FedUCB (M agents on a ring,
    gamma = 1) and, once, JDP-LinUCB (learner, privatizer, users). Wall-clock on a shared
    machine: the load average is printed and written beside the times. Writes
    bench_dp_processes (.csv, .md).
    """
    t = horizon
    runs = [("jdp", 1, "jdp-synthetic.toml", [f"jdp.horizon={t}"])]
    for m in agents:
        runs.append(("feducb-central", m, "feducb-synthetic.toml",
                     [f"feducb.agents={m}", f"feducb.horizon={t}"]))
        runs.append(("feducb-p2p-ring", m, "feducb-p2p.toml",
                     [f"feducb.agents={m}", f"feducb.horizon={t}", "feducb.gamma=1"]))
    click.echo(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    click.echo(" ".join(f"{h:>16}" for h in COLUMNS))
    rows = []
    for name, m, config, sets in runs:
        s = _run(config, sets, out.folder / f"{name}-M{m}")
        row = [name, m, len(s["parties"]), t, round(s["wall_s"], 2), round(s["protocol_wall_s"], 3),
               round(s["protocol_wall_s"] / t, 5), s["rounds_total"], s["sync_rounds"],
               round(s["cumulative_regret"] / m, 2)]
        rows.append(row)
        click.echo(" ".join(f"{v:>16}" for v in row))
    out.table("bench_dp_processes", COLUMNS, rows,
              f"DP protocols as real processes, T = {t} ({out.machine})")
