"""Shariff & Sheffet (2018): the authors' experiment and a sweep over epsilon: `mpcbandit figure jdp`."""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import click
import numpy as np

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.jdp_linucb import JDP_STREAM, simulate_jdp
from mpcbandit.dp.accounting import PrivacyParams, privacy_params
from mpcbandit.dp.noise import seeded_source
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    experiment_command,
    float_list,
    mean_std,
    sized_option,
    thinned,
)

__all__ = ["figure", "regret_curve", "spread"]

NOISES = ("none", "gaussian", "wishart", "shifted-wishart")
LABELS = {"random": "uniformly random", "none": "non-private LinUCB", "gaussian": "shifted Gaussian",
          "wishart": "Wishart", "shifted-wishart": "shifted Wishart"}
COLORS = {"random": "0.6", "none": "k", "gaussian": "tab:blue", "wishart": "tab:red",
          "shifted-wishart": "tab:orange"}
DIMS, ACTIONS, DELTA = 5, 10, 0.1
POINTS = 200  # curve samples written per (gap, noise)


def regret_curve(noise: str, eps: float, horizon: int, seed: int, gap: float) -> np.ndarray | None:
    """Cumulative pseudo-regret over t of one run (None where the noise's bounds are void)."""
    if noise == "random":  # expected regret of a uniform choice on the run's action sets
        env = GapEnvironment(seed, DIMS, ACTIONS, JDP_STREAM, gap)
        per_step = [m.max() - m.mean() for m in (env.action_set()[1] for _ in range(horizon))]
        return np.cumsum(per_step)
    params = _params(noise, eps, horizon)
    if params is None:
        return None
    out = simulate_jdp(dims=DIMS, actions=ACTIONS, horizon=horizon, params=params, seed=seed,
                       source=seeded_source(seed, f"fig-jdp/{noise}"), gap=gap)
    return np.cumsum(out["regret"])


def _params(noise: str, eps: float, horizon: int) -> PrivacyParams | None:
    """Shariff & Sheffet's noise and bounds for n = horizon (None where the bounds are void)."""
    try:
        return privacy_params(noise, epsilon=eps, delta=DELTA, dims=DIMS, releases=horizon,
                              delta_log_c=4.0)
    except ValueError:
        return None


def spread(noise: str, eps: float, horizon: int) -> float:
    """rho_max / rho_min of the noise (NaN where its bounds are void)."""
    p = _params(noise, eps, horizon)
    return float("nan") if p is None else p.rho_max / p.rho_min


def _run(job: tuple) -> np.ndarray | None:
    return regret_curve(*job)


def _runs(pool: ProcessPoolExecutor, noise: str, eps: float, horizon: int, runs: int,
          gap: float) -> list[np.ndarray | None]:
    return list(pool.map(_run, [(noise, eps, horizon, r + 1, gap) for r in range(runs)]))


def _final(runs: list[np.ndarray | None]) -> float:
    return float("nan") if runs[0] is None else float(np.mean([r[-1] for r in runs]))


def experiment(pool: ProcessPoolExecutor, sz: dict, out: Output) -> None:
    """Part (1): regret curves of the four learners at epsilon = 1, for each gap."""
    n = sz["horizon"]
    t_idx = thinned(n, POINTS)
    rows, panels = [], []
    for gap in sz["gaps"]:
        curves = []
        for noise in ("random", *NOISES):
            c = np.array(_runs(pool, noise, 1.0, n, sz["runs"], gap))
            mean, std = mean_std(c)
            rows += [[gap, noise, int(t) + 1, round(float(mean[t]), 3), round(float(std[t]), 3)]
                     for t in t_idx]
            curves.append(Curve(LABELS[noise], t_idx + 1, mean[t_idx],
                                std[t_idx] if len(c) > 1 else None,
                                dashed=noise in ("random", "none"), color=COLORS[noise]))
            click.echo(f"gap {gap:4g}  {LABELS[noise]:>20}: regret after n = {n}: "
                       f"{mean[-1]:9.1f} ± {std[-1]:.1f} ({sz['runs']} runs)")
        finals = [c.y[-1] for c in curves[2:]]
        note = ("the three private curves end within 5 % of each other"
                if max(finals) < 1.05 * min(finals) else "")
        panels.append(Panel(f"gap {gap:g}", "t", "cumulative pseudo-regret (mean ± std over runs)",
                            curves, logx=False, logy=True, note=note))
    out.table("jdp_experiment", ["gap", "noise", "t", "mean_regret", "std_regret"], rows,
              "JDP-LinUCB, the authors' experiment: cumulative pseudo-regret over t")
    out.figure("jdp_experiment", panels,
               f"JDP-LinUCB, the authors' experiment: d = {DIMS}, K = {ACTIONS}, epsilon = 1, "
               f"delta = {DELTA}, n = {n:,}, {sz['runs']} runs")


def eps_sweep(pool: ProcessPoolExecutor, sz: dict, out: Output) -> None:
    """Part (2): regret after n rounds against epsilon, gap 0.1, with each noise's spread."""
    n, runs = sz["eps_horizon"], sz["runs"]
    base = _final(_runs(pool, "none", 1.0, n, runs, 0.1))
    rand = _final(_runs(pool, "random", 1.0, n, runs, 0.1))
    click.echo(f"n = {n}, d = {DIMS}, K = {ACTIONS}, runs = {runs}, delta = {DELTA}, gap 0.1")
    click.echo(f"{'epsilon':>8} " + " ".join(f"{LABELS[x]:>16}" for x in NOISES[1:])
               + f" {'non-private':>12} {'random':>8}   rho_max/rho_min (G, W, sW)")
    rows = []
    for eps in sz["eps"]:
        vals = [_final(_runs(pool, x, eps, n, runs, 0.1)) for x in NOISES[1:]]
        spreads = [spread(x, eps, n) for x in NOISES[1:]]
        rows.append([eps, *[round(v, 3) for v in vals], round(base, 3), round(rand, 3),
                     *[round(s, 3) for s in spreads]])
        click.echo(f"{eps:8g} " + " ".join(f"{v:16.1f}" for v in vals) + f" {base:12.1f} "
                   f"{rand:8.1f}   " + ", ".join(f"{s:.3g}" for s in spreads))
    out.table("jdp_regret_vs_eps",
              ["epsilon", "gaussian", "wishart", "shifted_wishart", "non_private", "random",
               "spread_gaussian", "spread_wishart", "spread_shifted_wishart"], rows,
              f"JDP-LinUCB: regret after n = {n:,} against epsilon (gap 0.1)")
    eps = [r[0] for r in rows]
    curves = [Curve(LABELS[x], eps, [r[1 + i] for r in rows], color=COLORS[x])
              for i, x in enumerate(NOISES[1:])]
    curves += [Curve(LABELS["none"], eps, [base] * len(eps), dashed=True, color=COLORS["none"]),
               Curve(LABELS["random"], eps, [rand] * len(eps), dashed=True, color=COLORS["random"])]
    note = ("Only the Gaussian noise scales as 1/epsilon and tends to LinUCB.\n"
            "Wishart: k >= d + 2 at any epsilon, so its noise never vanishes;\n"
            f"its rho_max/rho_min is {rows[-1][7]:.3g} at epsilon = {eps[-1]:g}"
            " (shifted Wishart: 2).")
    out.figure("jdp_regret_vs_eps", [Panel("regret after n against epsilon", "epsilon",
                                           "cumulative pseudo-regret", curves, logx=True,
                                           note=note)],
               f"JDP-LinUCB: n = {n:,}, d = {DIMS}, K = {ACTIONS}, delta = {DELTA}, gap 0.1, "
               f"{runs} runs")


@experiment_command("jdp", "n = 10^5 for the experiment and 20,000 for the sweep, 5 runs, "
                           "9 values of epsilon (about an hour on 2 cores)",
                    short_help="Supplement: JDP-LinUCB's regret by noise and epsilon",
                    computed_by=("a float64 simulation in one process (simulate_jdp: protocol "
                                 "jdp's privatizer and arm rule), not the processes; JDP-LinUCB "
                                 "computes nothing in secret: its privacy is the noise"))
@click.option("--part", type=click.Choice(["experiment", "eps", "all"]), default="all",
              help="The authors' experiment, the sweep over epsilon, or both.")
@sized_option("--horizon", int, 5000, 100_000, "n of the experiment.")
@sized_option("--eps-horizon", int, 2000, 20_000, "n of the sweep over epsilon.")
@sized_option("--runs", int, 3, 5, "Runs averaged per point (seeds 1 ... runs).")
@sized_option("--eps", float_list, [0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0],
              [0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 1000.0, 10000.0], "The sweep's epsilons.")
@sized_option("--gaps", float_list, [0.0, 0.1], [0.0, 0.1],
              "The experiment's gaps (the best action's least lead in mean reward).")
@click.option("--jobs", type=click.IntRange(min=1), default=os.cpu_count() or 1,
              help="Worker processes the runs are spread over.")
def figure(out: Output, paper: bool, part: str, jobs: int, **sz) -> None:
    """Shariff & Sheffet (2018), JDP-LinUCB: the authors' experiment and regret against epsilon.

    The paper has no figure in its main text; its supplementary experiment compares non-private
    LinUCB with JDP-LinUCB under Wishart, shifted Wishart and shifted Gaussian noise at d = 5,
    epsilon = 1, delta = 0.1, with and without a gap, K = 10 actions per round, beside a
    uniformly random choice (jdp_experiment). The sweep (jdp_regret_vs_eps) shows regret after
    n rounds against epsilon with each noise's rho_max / rho_min: only the Gaussian variant
    tends to LinUCB as epsilon grows; the Wishart's k is floored at d + 2 whatever epsilon.

    Runs the protocol's maths in-process (`simulate_jdp`: the same privatizer and arm rule as
    protocol jdp's processes; a test checks they give the same arms).
    """
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        if part in ("experiment", "all"):
            experiment(pool, sz, out)
        if part in ("eps", "all"):
            eps_sweep(pool, sz, out)
