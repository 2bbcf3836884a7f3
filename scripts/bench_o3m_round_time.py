"""Seconds per round of the full multi-process O3M protocol (`mpcbandit run`, one OS process per
party: PMG, AP, M-1 passive participants, environment), against the plaintext reference.

Prints wall and protocol seconds, seconds per round (the AP's protocol time / T), rounds and
bytes per round, and whether the arms equal the plaintext run's. Writes round_time.csv.

    python scripts/bench_o3m_round_time.py                    # default config (T = 1000)
    python scripts/bench_o3m_round_time.py --paper            # T = 5000, LinUCB and LinTS
    python scripts/bench_o3m_round_time.py --iterations 50 --net lan
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.results import write_csv  # noqa: E402
from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.launch import run_local  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "o3m-synthetic.toml"


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", action="store_true", help="T = 5000 (the paper's run)")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--algorithms", default=None, help="comma list (default linucb; --paper: both)")
    ap.add_argument("--net", default="none", help="none | lan | wan")
    ap.add_argument("--config", type=Path, default=CONFIG)
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-round-time"))
    args = ap.parse_args(argv)
    algorithms = (args.algorithms or ("linucb,lints" if args.paper else "linucb")).split(",")
    rows = []
    for alg in algorithms:
        sets = [f"o3m.algorithm={alg}", f"run.net={args.net}"]
        if args.iterations or args.paper:
            sets.append(f"o3m.iterations={args.iterations or 5000}")
        quiet = lambda *a, **k: None  # noqa: E731
        secure = run_local(load_config(args.config, sets), args.out / f"{alg}-secure", echo=quiet)
        plain = run_local(load_config(args.config, sets), args.out / f"{alg}-plain", plaintext=True, echo=quiet)
        diff = float(np.abs(np.subtract(secure["series"]["theta_norm"], plain["series"]["theta_norm"])).max())
        rows.append({"algorithm": alg, "iterations": secure["steps"],
                     "parties": len(secure["parties"]), "net": args.net,
                     "wall_s": secure["wall_s"], "protocol_wall_s": secure["protocol_wall_s"],
                     "seconds_per_round": secure["seconds_per_step"],
                     "plaintext_seconds_per_round": plain["protocol_wall_s"] / plain["steps"],
                     "rounds_per_iteration": secure["rounds_per_step"],
                     "bytes_per_iteration": secure["bytes_per_step"],
                     "same_arms": secure["series"]["arms"] == plain["series"]["arms"], "max_theta_norm_diff": diff,
                     "cumulative_regret": secure.get("cumulative_regret")})
    load = os.getloadavg()
    print(f"O3M, full multi-process protocol ({args.config.name}), load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'alg':<7} {'T':>5} {'procs':>5} {'wall s':>7} {'proto s':>8} {'s/round':>9} "
          f"{'plain s/rd':>10} {'rounds/it':>9} {'KB/it':>7} {'same arms':>9} {'max dnorm':>9}")
    for r in rows:
        print(f"{r['algorithm']:<7} {r['iterations']:>5} {r['parties']:>5} {r['wall_s']:>7.2f} "
              f"{r['protocol_wall_s']:>8.3f} {r['seconds_per_round']:>9.6f} "
              f"{r['plaintext_seconds_per_round']:>10.6f} {r['rounds_per_iteration']:>9.2f} "
              f"{r['bytes_per_iteration'] / 1e3:>7.1f} {str(r['same_arms']):>9} "
              f"{r['max_theta_norm_diff']:>9.1e}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "round_time.csv"
    write_csv(path, rows)
    print(f"wrote {path}")
    return rows


if __name__ == "__main__":
    main()
