"""Seconds per round of the DP protocols with every party a real OS process (`mpcbandit run`).

For each M: centralized FedUCB (controller + M agents), P2P FedUCB (M agents on a ring) and,
once, JDP-LinUCB (learner, privatizer, users). Prints a table and writes CSV. Wall-clock on a
shared machine: report `uptime` load beside it.

    python scripts/bench_dp_processes.py [--agents 2 4 8] [--horizon 200] [--out runs/bench-dp]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's mpcbandit

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.launch import run_local  # noqa: E402


def bench(config: str, sets: list[str], out: Path) -> dict:
    """One real-process run; the summary."""
    return run_local(load_config(ROOT / "configs" / config, sets), out, echo=lambda *_: None)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--horizon", type=int, default=200)
    ap.add_argument("--out", type=Path, default=Path("runs/bench-dp"))
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    t = args.horizon
    runs = [("jdp", 1, "jdp-synthetic.toml", [f"jdp.horizon={t}"])]
    for m in args.agents:
        runs.append(("feducb-central", m, "feducb-synthetic.toml",
                     [f"feducb.agents={m}", f"feducb.horizon={t}"]))
        runs.append(("feducb-p2p-ring", m, "feducb-p2p.toml",
                     [f"feducb.agents={m}", f"feducb.horizon={t}", "feducb.gamma=1"]))
    header = ["protocol", "agents", "processes", "T", "wall_s", "protocol_s", "s_per_round",
              "rounds_total", "sync_rounds", "regret_per_agent"]
    rows = []
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(" ".join(f"{h:>16}" for h in header))
    for name, m, config, sets in runs:
        s = bench(config, sets, args.out / f"{name}-M{m}")
        row = [name, m, len(s["parties"]), t, round(s["wall_s"], 2), round(s["protocol_wall_s"], 3),
               round(s["protocol_wall_s"] / t, 5), s["rounds_total"], s["sync_rounds"],
               round(s["cumulative_regret"] / m, 2)]
        rows.append(row)
        print(" ".join(f"{v:>16}" for v in row))
    with (args.out / "bench_dp_processes.csv").open("w", newline="") as f:
        csv.writer(f).writerows([header, *rows])


if __name__ == "__main__":
    main()
