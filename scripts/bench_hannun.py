"""Benchmark of Hannun et al. Algorithm 1: seconds, rounds and bytes per iteration with real
processes on loopback (feature holders, arm-puller, environment, reward holder and dealer each a
process), beside the float64 reference in the same run; optionally on the emulated LAN, plus
the analytic WAN estimate (compute + rounds x RTT + bytes / bandwidth).

    python scripts/bench_hannun.py [--arms 10 100] [--nets none lan] [--iterations T] [--full]
Writes DIR/bench_hannun.csv and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpcbandit.results import write_csv  # noqa: E402
from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.launch import run_local  # noqa: E402

CONFIG = ROOT / "configs" / "hannun-synthetic.toml"
COLUMNS = ["arms", "parties", "net", "iterations", "ms_per_iteration", "plaintext_ms_per_iteration",
           "slowdown", "rounds_per_iteration", "online_kb_sent+recv", "online_kb_sent",
           "all_kb_busiest_holder", "dealer_kb", "wan_estimate_ms", "agreement",
           "reward", "plaintext_reward", "load_1min"]


def bench_one(arms: int, parties: int, net: str, iterations: int, out: Path, extra: list[str]) -> dict:
    """One secure run and its plaintext reference; the row of the table."""
    sets = [f"hannun.arms={arms}", f"hannun.feature_holders={parties}",
            f"hannun.iterations={iterations}", f"run.net={net}", *extra]
    tag = f"a{arms}-p{parties}-{net}"
    quiet = lambda *_: None  # noqa: E731
    secure = run_local(load_config(CONFIG, sets), out / tag, echo=quiet)
    plain = run_local(load_config(CONFIG, sets), out / (tag + "-plaintext"), plaintext=True, echo=quiet)
    t = secure["steps"]
    by_party = secure["bytes_per_step_by_party"]
    fh = [v for k, v in by_party.items() if k.startswith("feature_holder")]
    plain_ms = plain["protocol_wall_s"] / t * 1e3
    ms = secure["seconds_per_step"] * 1e3
    return {
        "arms": arms, "parties": parties, "net": net, "iterations": t,
        "ms_per_iteration": round(ms, 2), "plaintext_ms_per_iteration": round(plain_ms, 4),
        "slowdown": round(ms / plain_ms) if plain_ms > 0 else None,
        "rounds_per_iteration": round(secure["critical_rounds_per_step"], 2),
        "online_kb_sent+recv": round(secure["online_bytes_per_step_feature_holder"] / 1e3, 1),
        "online_kb_sent": round(secure["online_bytes_sent_per_step_feature_holder"] / 1e3, 1),
        "all_kb_busiest_holder": round(max(fh) / 1e3, 1),
        "dealer_kb": round(by_party["dealer.0"] / 1e3, 1),
        "wan_estimate_ms": round(secure["wan_estimate_s_per_step"] * 1e3, 1),
        "agreement": secure.get("agreement_with_plaintext"),
        "reward": secure["cumulative_reward"],
        "plaintext_reward": plain["cumulative_reward"],
        "load_1min": round(os.getloadavg()[0], 2),
    }


def print_table(rows: list[dict]) -> None:
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in COLUMNS}
    print("  ".join(c.rjust(widths[c]) for c in COLUMNS))
    for r in rows:
        print("  ".join(str(r[c]).rjust(widths[c]) for c in COLUMNS))


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arms", type=int, nargs="+", default=[10, 100])
    p.add_argument("--parties", type=int, nargs="+", default=[2])
    p.add_argument("--nets", nargs="+", default=["none", "lan"])
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--full", action="store_true", help="2,000 iterations per run")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="extra config override, e.g. hannun.newton_iterations=3")
    p.add_argument("--out", type=Path, default=Path("runs/bench_hannun"))
    args = p.parse_args(argv)
    iterations = 2_000 if args.full else args.iterations
    rows = [bench_one(a, n, net, iterations, args.out, args.sets)
            for a in args.arms for n in args.parties for net in args.nets]
    write_csv(args.out / "bench_hannun.csv", rows, COLUMNS)
    (args.out / "bench_hannun.json").write_text(json.dumps(rows, indent=1))
    print_table(rows)
    print(f"wrote {args.out / 'bench_hannun.csv'}")


if __name__ == "__main__":
    main()
