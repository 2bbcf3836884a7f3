"""Shariff & Sheffet (2018): regret of JDP-LinUCB with Wishart vs shifted Gaussian noise vs
non-private LinUCB, over epsilon. CSV + PNG, table printed.

Runs the protocol's maths in-process (`simulate_jdp`: the same privatizer and arm rule as
protocol `jdp`'s processes; a test checks they give the same arms) on the synthetic environment
of Dubey & Pentland §4.4. Reduced sizes by default; `--full` uses T = 10^5, 20 runs.

    python scripts/fig_jdp.py [--out runs/fig-jdp] [--full]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mpcbandit

from mpcbandit.bandits.jdp_linucb import simulate_jdp
from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source

# the papers' noise at eps <= 10 swamps T in the thousands; larger eps shows the approach to
# the non-private curve (Wishart needs sqrt(mk) > sqrt(d) + sqrt(2 ln(8n/alpha)): NaN beyond)
REDUCED = {"horizon": 2000, "dims": 5, "actions": 10, "runs": 2,
           "eps": [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0]}
FULL = {"horizon": 100_000, "dims": 5, "actions": 10, "runs": 20,
        "eps": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0, 10000.0]}


def final_regret(noise: str, eps: float, sz: dict, seed: int, delta: float = 0.1) -> float:
    """Cumulative pseudo-regret after T rounds of one run (NaN where the bounds are void)."""
    try:
        params = privacy_params(noise, epsilon=eps, delta=delta, dims=sz["dims"],
                                releases=sz["horizon"], delta_log_c=4.0)
    except ValueError:
        return float("nan")
    out = simulate_jdp(dims=sz["dims"], actions=sz["actions"], horizon=sz["horizon"],
                       params=params, seed=seed, source=seeded_source(seed, f"fig-jdp/{noise}"))
    return float(out["regret"].sum())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/fig-jdp"))
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--horizon", type=int)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--eps", type=float, nargs="+")
    args = ap.parse_args(argv)
    sz = dict(FULL if args.full else REDUCED)
    for key in ("horizon", "runs", "eps"):
        if getattr(args, key):
            sz[key] = getattr(args, key)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    base = np.mean([final_regret("none", 1.0, sz, r + 1) for r in range(sz["runs"])])
    rows = []
    print(f"T = {sz['horizon']}, d = {sz['dims']}, K = {sz['actions']}, runs = {sz['runs']}, delta = 0.1")
    print(f"{'epsilon':>8} {'wishart':>10} {'gaussian':>10} {'non-private':>12}")
    for eps in sz["eps"]:
        w = np.mean([final_regret("wishart", eps, sz, r + 1) for r in range(sz["runs"])])
        g = np.mean([final_regret("gaussian", eps, sz, r + 1) for r in range(sz["runs"])])
        rows.append([eps, round(float(w), 3), round(float(g), 3), round(float(base), 3)])
        print(f"{eps:8g} {w:10.2f} {g:10.2f} {base:12.2f}")
    with (args.out / "jdp_regret_vs_eps.csv").open("w", newline="") as f:
        csv.writer(f).writerows([["epsilon", "wishart", "gaussian", "non_private"], *rows])
    _plot(args.out / "jdp_regret_vs_eps.png", rows, sz)
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


def _plot(path: Path, rows: list[list], sz: dict) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib not installed: no {path.name})")
        return
    eps = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(eps, [r[1] for r in rows], "o-", label="JDP-LinUCB, Wishart")
    ax.plot(eps, [r[2] for r in rows], "s-", label="JDP-LinUCB, shifted Gaussian")
    ax.plot(eps, [r[3] for r in rows], "k--", label="non-private LinUCB")
    ax.set_xscale("log")
    ax.set(title=f"Regret after T = {sz['horizon']}", xlabel="epsilon", ylabel="cumulative regret")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
