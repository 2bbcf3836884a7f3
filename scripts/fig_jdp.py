"""Shariff & Sheffet (2018): the authors' experiment and a sweep over epsilon. CSV + PNG each.

The paper has no figure in its main text; its supplementary experiment compares non-private
LinUCB with JDP-LinUCB under Wishart, shifted Wishart and shifted Gaussian noise at d = 5,
epsilon = 1, delta = 0.1, with and without a gap between the best action and the rest.

(1) `jdp_experiment.csv/.png`: mean cumulative regret over t of the four learners, gap 0 and
    gap 0.1 (the best action's least lead in mean reward), K = 10 actions per round, beside a
    uniformly random choice (its expected regret on the same action sets).
(2) `jdp_regret_vs_eps.csv/.png`: regret after T rounds against epsilon, with each noise's
    rho_max / rho_min. The Gaussian variant tends to LinUCB as epsilon grows (its noise scales
    as 1/epsilon); the Wishart variants do not: k is floored at d + 2 whatever epsilon, so the
    noise never vanishes and the plain Wishart's rho_max / rho_min stays wide.

Runs the protocol's maths in-process (`simulate_jdp`: the same privatizer and arm rule as
protocol `jdp`'s processes; a test checks they give the same arms), runs spread over the cores.
Default sizes finish in about a minute; `--paper` uses n = 10^5 (the largest this 2-core
machine runs in minutes), 5 runs.

    python scripts/fig_jdp.py [--out runs/fig-jdp] [--paper] [--part experiment|eps|all]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mpcbandit

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.jdp_linucb import JDP_STREAM, simulate_jdp
from mpcbandit.dp.accounting import PrivacyParams, privacy_params
from mpcbandit.dp.noise import seeded_source

NOISES = ("none", "gaussian", "wishart", "shifted-wishart")
LABELS = {"random": "uniformly random", "none": "non-private LinUCB", "gaussian": "shifted Gaussian", "wishart": "Wishart",
          "shifted-wishart": "shifted Wishart"}
REDUCED = {"horizon": 5000, "dims": 5, "actions": 10, "runs": 3, "gaps": [0.0, 0.1],
           "eps": [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0], "eps_horizon": 2000}
PAPER = {"horizon": 100_000, "dims": 5, "actions": 10, "runs": 5, "gaps": [0.0, 0.1],
         "eps": [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0, 10000.0], "eps_horizon": 20_000}
POINTS = 200  # curve samples written per (gap, noise)


def regret_curve(noise: str, eps: float, horizon: int, sz: dict, seed: int, gap: float,
                 delta: float = 0.1) -> np.ndarray | None:
    """Cumulative pseudo-regret over t of one run (None where the noise's bounds are void)."""
    if noise == "random":  # expected regret of a uniform choice on the run's action sets
        env = GapEnvironment(seed, sz["dims"], sz["actions"], JDP_STREAM, gap)
        per_step = [m.max() - m.mean() for m in (env.action_set()[1] for _ in range(horizon))]
        return np.cumsum(per_step)
    params = _params(noise, eps, horizon, delta, sz["dims"])
    if params is None:
        return None
    out = simulate_jdp(dims=sz["dims"], actions=sz["actions"], horizon=horizon, params=params,
                       seed=seed, source=seeded_source(seed, f"fig-jdp/{noise}"), gap=gap)
    return np.cumsum(out["regret"])


def _params(noise: str, eps: float, horizon: int, delta: float, dims: int) -> PrivacyParams | None:
    """Shariff & Sheffet's noise and bounds for n = horizon (None where the bounds are void)."""
    try:
        return privacy_params(noise, epsilon=eps, delta=delta, dims=dims, releases=horizon,
                              delta_log_c=4.0)
    except ValueError:
        return None


def spread(noise: str, eps: float, horizon: int, delta: float = 0.1, dims: int = 5) -> float:
    """rho_max / rho_min of the noise (NaN where its bounds are void)."""
    p = _params(noise, eps, horizon, delta, dims)
    return float("nan") if p is None else p.rho_max / p.rho_min


def _curves(pool: ProcessPoolExecutor, jobs: list[tuple]) -> list[np.ndarray | None]:
    return list(pool.map(_run, jobs))


def _run(job: tuple) -> np.ndarray | None:
    return regret_curve(*job)


def experiment(pool: ProcessPoolExecutor, sz: dict, out: Path) -> list[list]:
    """Part (1): regret curves of the four learners at epsilon = 1, for each gap."""
    t_idx = np.unique(np.linspace(0, sz["horizon"] - 1, POINTS).astype(int))
    rows = []
    for gap in sz["gaps"]:
        for noise in ("random", *NOISES):
            runs = _curves(pool, [(noise, 1.0, sz["horizon"], sz, r + 1, gap) for r in range(sz["runs"])])
            c = np.array(runs)
            mean, std = c.mean(axis=0), (c.std(axis=0, ddof=1) if len(c) > 1 else 0 * c[0])
            rows += [[gap, noise, int(t) + 1, round(float(mean[t]), 3), round(float(std[t]), 3)]
                     for t in t_idx]
            print(f"gap {gap:4g}  {LABELS[noise]:>20}: regret after n = {sz['horizon']}: "
                  f"{mean[-1]:9.1f} +- {std[-1]:.1f} ({sz['runs']} runs)")
    _write(out / "jdp_experiment.csv", ["gap", "noise", "t", "mean_regret", "std_regret"], rows)
    _plot_experiment(out / "jdp_experiment.png", rows, sz)
    return rows


def eps_sweep(pool: ProcessPoolExecutor, sz: dict, out: Path) -> list[list]:
    """Part (2): regret after eps_horizon rounds against epsilon, gap 0.1."""
    n = sz["eps_horizon"]
    base = _final(_curves(pool, [("none", 1.0, n, sz, r + 1, 0.1) for r in range(sz["runs"])]))
    rand = _final(_curves(pool, [("random", 1.0, n, sz, r + 1, 0.1) for r in range(sz["runs"])]))
    rows = []
    print(f"n = {n}, d = {sz['dims']}, K = {sz['actions']}, runs = {sz['runs']}, delta = 0.1, gap 0.1")
    print(f"{'epsilon':>8} " + " ".join(f"{LABELS[x]:>16}" for x in NOISES[1:])
          + f" {'non-private':>12} {'random':>8}   rho_max/rho_min (G, W, sW)")
    for eps in sz["eps"]:
        vals = [_final(_curves(pool, [(x, eps, n, sz, r + 1, 0.1) for r in range(sz["runs"])]))
                for x in NOISES[1:]]
        spreads = [spread(x, eps, n, dims=sz["dims"]) for x in NOISES[1:]]
        rows.append([eps, *[round(v, 3) for v in vals], round(base, 3), round(rand, 3),
                     *[round(s, 3) for s in spreads]])
        print(f"{eps:8g} " + " ".join(f"{v:16.1f}" for v in vals) + f" {base:12.1f} {rand:8.1f}   "
              + ", ".join(f"{s:.3g}" for s in spreads))
    _write(out / "jdp_regret_vs_eps.csv",
           ["epsilon", "gaussian", "wishart", "shifted_wishart", "non_private", "random",
            "spread_gaussian", "spread_wishart", "spread_shifted_wishart"], rows)
    _plot_eps(out / "jdp_regret_vs_eps.png", rows, sz)
    return rows


def _final(runs: list[np.ndarray | None]) -> float:
    return float("nan") if runs[0] is None else float(np.mean([r[-1] for r in runs]))


def _write(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        print("(matplotlib not installed: no PNG)")
        return None


STYLE = {"random": ("0.6", ":", None), "none": ("k", "--", None), "gaussian": ("tab:blue", "-", "s"),
         "wishart": ("tab:red", "-", "o"), "shifted-wishart": ("tab:orange", "-.", "^")}


def _plot_experiment(path: Path, rows: list[list], sz: dict) -> None:
    plt = _pyplot()
    if plt is None:
        return
    curves: dict = {}
    for gap, noise, t, mean, std in rows:
        curves.setdefault((float(gap), noise), []).append((int(t), float(mean), float(std)))
    gaps = sorted({g for g, _ in curves})
    fig, axes = plt.subplots(1, len(gaps), figsize=(5 * len(gaps), 3.8))
    for ax, gap in zip(np.atleast_1d(axes), gaps):
        for i, noise in enumerate(("random", *NOISES)):
            t, mean, std = (np.array(c) for c in zip(*curves[gap, noise]))
            color, ls, marker = STYLE[noise]
            ax.plot(t, mean, color=color, ls=ls, marker=marker, ms=4, label=LABELS[noise],
                    markevery=(i * len(t) // 40, len(t) // 8))
            ax.fill_between(t, mean - std, mean + std, color=color, alpha=0.15, lw=0)
        finals = [curves[gap, x][-1][1] for x in NOISES[1:]]
        if max(finals) < 1.05 * min(finals):
            ax.text(0.02, 0.97, "the three private curves lie within 5 % of each other",
                    transform=ax.transAxes, va="top", fontsize=7)
        ax.set(title=f"gap {gap:g}", xlabel="t", yscale="log")
        ax.set_ylim(bottom=1)
    np.atleast_1d(axes)[0].set_ylabel("cumulative pseudo-regret (mean +- std over runs)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.suptitle(f"JDP-LinUCB, d = {sz['dims']}, K = {sz['actions']}, epsilon = 1, delta = 0.1, "
                 f"{sz['runs']} runs", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_eps(path: Path, rows: list[list], sz: dict) -> None:
    plt = _pyplot()
    if plt is None:
        return
    eps = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4.8))
    for col, noise, marker in ((1, "gaussian", "s"), (2, "wishart", "o"), (3, "shifted-wishart", "^")):
        color, ls, _ = STYLE[noise]
        ax.plot(eps, [r[col] for r in rows], marker=marker, color=color, ls=ls, label=LABELS[noise])
    ax.plot(eps, [r[4] for r in rows], "k--", label=LABELS["none"])
    ax.plot(eps, [r[5] for r in rows], color="0.6", ls=":", label=LABELS["random"])
    ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="cumulative pseudo-regret",
           title=f"Regret after n = {sz['eps_horizon']} (d = {sz['dims']}, K = {sz['actions']}, "
                 f"delta = 0.1, gap 0.1, {sz['runs']} runs)")
    ax.title.set_fontsize(8)
    w_spread = rows[-1][7]
    ax.legend(fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.text(0.02, 0.01, "Only the Gaussian noise scales as 1/epsilon and tends to LinUCB.\n"
             "Wishart: k >= d + 2 at any epsilon, so its noise never vanishes; its rho_max/rho_min\n"
             f"is {w_spread:.3g} at epsilon = {eps[-1]:g} (shifted Wishart: 2, by added regularization).",
             fontsize=7, va="bottom")
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _replot(out: Path, sz: dict) -> None:
    """Both PNGs from the CSVs an earlier run wrote to `out`."""
    with (out / "jdp_experiment.csv").open() as f:
        _plot_experiment(out / "jdp_experiment.png", list(csv.reader(f))[1:], sz)
    with (out / "jdp_regret_vs_eps.csv").open() as f:
        rows = [[float(v) for v in r] for r in list(csv.reader(f))[1:]]
    _plot_eps(out / "jdp_regret_vs_eps.png", rows, sz)
    print(f"redrew {out}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path("runs/fig-jdp"), help="output folder")
    ap.add_argument("--paper", action="store_true", help="n = 10^5, 5 runs (minutes on 2 cores)")
    ap.add_argument("--part", choices=["experiment", "eps", "all"], default="all")
    ap.add_argument("--horizon", type=int, help="n of the experiment (and of the sweep)")
    ap.add_argument("--runs", type=int, help="runs averaged per point")
    ap.add_argument("--eps", type=float, nargs="+", help="epsilons of the sweep")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes")
    ap.add_argument("--replot", action="store_true",
                    help="redraw the PNGs from the CSVs in --out (sizes as given) without running")
    args = ap.parse_args(argv)
    sz = dict(PAPER if args.paper else REDUCED)
    if args.horizon:
        sz["horizon"] = sz["eps_horizon"] = args.horizon
    for key in ("runs", "eps"):
        if getattr(args, key):
            sz[key] = getattr(args, key)
    if args.replot:
        _replot(args.out, sz)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        if args.part in ("experiment", "all"):
            experiment(pool, sz, args.out)
        if args.part in ("eps", "all"):
            eps_sweep(pool, sz, args.out)
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
