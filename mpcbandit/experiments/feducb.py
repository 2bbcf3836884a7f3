"""Dubey & Pentland (2020), Figure 1, for centralized FedUCB: `mpcbandit figure feducb`."""

from __future__ import annotations

import time

import click
import numpy as np

from mpcbandit.bandits.feducb import simulate_centralized, sync_rounds_of
from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    experiment_command,
    float_list,
    int_list,
    sized_option,
)

__all__ = ["figure", "run_feducb"]

SCHEDULE_NAMES = {"m1.5": "O(M^1.5)", "mlogt": "O(M log T)", "mt": "O(MT)"}
ACTIONS = 10


def run_feducb(*, agents: int, dims: int, actions: int, horizon: int, epsilon: float,
               noise: str, schedule: str, seed: int, delta: float = 0.1,
               beta: float | None = None) -> tuple[np.ndarray, np.ndarray, int, float]:
    """Per-agent cumulative regret curves of one run and of a random choice, its sync count and
    the privatizer's rho_min (each agent's share of the regularizer)."""
    releases = len(sync_rounds_of(schedule, agents, horizon))
    params = privacy_params(noise, epsilon=epsilon, delta=delta, dims=dims, releases=releases,
                            union_factor=agents, delta_log_c=2.0)
    out = simulate_centralized(agents=agents, dims=dims, actions=actions, horizon=horizon,
                               params=params, schedule=schedule, threshold=0.0, seed=seed,
                               source=lambda i: seeded_source(seed, f"fig-feducb/agent{i}"),
                               beta=beta)
    return (np.cumsum(out["regret"]) / agents, np.cumsum(out["random_regret"]) / agents,
            len(out["sync_at"]), params.rho_min)


def _mean_curve(runs: int, **kw) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, float]:
    """Mean and std over runs of the per-agent regret curve, the random curve's mean, syncs,
    rho_min."""
    curves, randoms, syncs, rho_min = zip(*(run_feducb(seed=r + 1, **kw) for r in range(runs)))
    return (np.mean(curves, axis=0), np.std(curves, axis=0), np.mean(randoms, axis=0), syncs[0],
            rho_min[0])


def _bonus_bound(beta: float | None, agents: int, rho_min: float) -> float | str:
    """A fixed radius's largest UCB bonus, beta / sqrt(M rho_min): V >= M rho_min I (w.p.
    1 - alpha), so beta ||x||_{V^-1} is at most this for ||x|| <= 1. Blank for Prop. 2's radius,
    which moves."""
    return "" if beta is None else float(f"{beta / np.sqrt(agents * rho_min):.3g}")


def _checkpoints(horizon: int, points: int = 50) -> np.ndarray:
    return np.unique(np.linspace(1, horizon, min(points, horizon)).astype(int))


def _conditions(sz: dict, m: int | str) -> str:
    """A figure's conditions; a tuned radius is declared, Prop. 2's is the default."""
    beta = "Prop. 2's beta" if sz["beta"] is None else f"tuned beta = {sz['beta']:g}"
    return (f"FedUCB (centralized), M = {m}, T = {sz['horizon']:,}, d = {sz['dims']}, "
            f"K = {ACTIONS}, delta = 0.1, {sz['runs']} run(s), {beta}")


def panel_a(sz: dict, out: Output) -> None:
    """(A) per-agent regret after T against epsilon, one line per M."""
    rows = []
    for m in sz["agents"]:
        for eps in sz["eps"]:
            t0 = time.perf_counter()
            curve, std, rand, syncs, _ = _mean_curve(
                sz["runs"], agents=m, dims=sz["dims"], actions=ACTIONS, horizon=sz["horizon"],
                epsilon=eps, noise="gaussian", schedule="mlogt", beta=sz["beta"])
            rows.append([m, eps, sz["horizon"], sz["runs"], round(float(curve[-1]), 3),
                         round(float(std[-1]), 3), round(float(rand[-1]), 3), syncs,
                         round(time.perf_counter() - t0, 2)])
            click.echo(f"A  M={m:<4} eps={eps:<6g} per-agent regret {curve[-1]:9.2f} +- "
                       f"{std[-1]:.2f}  random {rand[-1]:.2f}  syncs {syncs}")
    out.table("fig1a_regret_vs_eps",
              ["agents", "epsilon", "horizon", "runs", "per_agent_regret", "std",
               "random_per_agent_regret", "sync_rounds", "seconds"], rows,
              "FedUCB Figure 1 (A): per-agent regret after T against epsilon")
    spread = sz["runs"] > 1
    curves = [Curve(f"M = {m}", [r[1] for r in rows if r[0] == m], [r[4] for r in rows if r[0] == m],
                    [r[5] for r in rows if r[0] == m] if spread else None) for m in sz["agents"]]
    first = [r for r in rows if r[0] == sz["agents"][0]]
    curves.append(Curve("uniformly random", [r[1] for r in first], [r[6] for r in first], dashed=True))
    out.figure("fig1a_regret_vs_eps", [Panel("(A) Privacy budget", "epsilon",
                                             "per-agent regret after T" + (" (mean ± std)" if spread else ""),
                                             curves, logx=True)],
               _conditions(sz, ", ".join(map(str, sz["agents"]))) + ", n = O(M log T)")


def panel_b(sz: dict, out: Output) -> None:
    """(B) per-agent regret over t for three communication schedules, private and not."""
    rows, curves, ts = [], [], _checkpoints(sz["horizon"])
    for schedule, name in SCHEDULE_NAMES.items():
        for noise in ("gaussian", "none"):
            curve, std, rand, syncs, rho = _mean_curve(
                sz["runs"], agents=sz["agents_bc"], dims=sz["dims"], actions=ACTIONS,
                horizon=sz["horizon"], epsilon=1.0, noise=noise, schedule=schedule, beta=sz["beta"])
            bonus = _bonus_bound(sz["beta"], sz["agents_bc"], rho)
            label = f"n = {name}, {'private' if noise != 'none' else 'non-private'}"
            curves.append(Curve(label, ts, curve[ts - 1], std[ts - 1] if sz["runs"] > 1 else None,
                                dashed=noise == "none"))
            rows += [[schedule, noise, syncs, int(t), round(float(curve[t - 1]), 3),
                      round(float(rand[t - 1]), 3), round(rho, 1), bonus] for t in ts]
            click.echo(f"B  {label:<34} per-agent regret {curve[-1]:9.2f}  syncs {syncs}")
    curves.append(Curve("uniformly random", ts, rand[ts - 1], dashed=True))
    out.table("fig1b_communication",
              ["schedule", "noise", "sync_rounds", "t", "per_agent_regret", "random_per_agent_regret",
               "rho_min", "ucb_bonus_bound"],
              rows, "FedUCB Figure 1 (B): per-agent regret over t, three communication schedules")
    out.figure("fig1b_communication", [Panel("(B) Communication, epsilon = 1", "t",
                                             "per-agent cumulative regret", curves, logx=False)],
               _conditions(sz, sz["agents_bc"]))


def panel_c(sz: dict, out: Output) -> None:
    """(C) per-agent regret over t for several d."""
    rows, curves, ts = [], [], _checkpoints(sz["horizon"])
    for d in sz["dims_c"]:
        curve, std, rand, syncs, rho = _mean_curve(sz["runs"], agents=sz["agents_bc"], dims=d,
                                                   actions=ACTIONS, horizon=sz["horizon"],
                                                   epsilon=1.0, noise="gaussian", schedule="mlogt",
                                                   beta=sz["beta"])
        bonus = _bonus_bound(sz["beta"], sz["agents_bc"], rho)
        curves.append(Curve(f"d = {d}", ts, curve[ts - 1], std[ts - 1] if sz["runs"] > 1 else None))
        rows += [[d, syncs, int(t), round(float(curve[t - 1]), 3), round(float(rand[t - 1]), 3),
                  round(rho, 1), bonus] for t in ts]
        click.echo(f"C  d={d:<4} per-agent regret {curve[-1]:9.2f}  random {rand[-1]:.2f}  "
                   f"syncs {syncs}")
    out.table("fig1c_dimension", ["dims", "sync_rounds", "t", "per_agent_regret",
                                  "random_per_agent_regret", "rho_min", "ucb_bonus_bound"], rows,
              "FedUCB Figure 1 (C): per-agent regret over t for several d")
    sz_c = dict(sz, dims=", ".join(map(str, sz["dims_c"])))
    out.figure("fig1c_dimension", [Panel("(C) Dependence on d, epsilon = 1, n = O(M log T)", "t",
                                         "per-agent cumulative regret", curves, logx=False)],
               _conditions(sz_c, sz["agents_bc"]))


@experiment_command("feducb", "T = 10^7, M up to 100, d up to 128, 100 runs (days of CPU)",
                    short_help="Fig. 1: FedUCB's regret against epsilon, schedule and d",
                    computed_by=("a float64 simulation in one process (simulate_centralized: "
                                 "protocol feducb's estimators, privatizer and arms), not the "
                                 "agent processes; FedUCB computes nothing in secret: its privacy "
                                 "is the noise"))
@click.option("--panel", type=click.Choice(["A", "B", "C", "all"]), default="all",
              help="Which panel of Figure 1.")
@sized_option("--horizon", int, 1000, 10**7, "T, rounds (every agent acts each round).")
@sized_option("--runs", int, 1, 100, "Runs averaged per point (seeds 1 ... runs).")
@sized_option("--agents", int_list, [10, 20, 50, 100], [10, 20, 50, 100], "Panel A: the values of M.")
@sized_option("--agents-bc", int, 20, 100, "Panels B and C: M.")
@sized_option("--eps", float_list, [0.1, 1.0, 10.0, 100.0, 1e3, 1e4], [0.1, 0.3, 1.0, 3.0, 10.0],
              "Panel A: the values of epsilon.")
@sized_option("--dims", int, 10, 10, "Panels A and B: d.")
@sized_option("--dims-c", int_list, [4, 8, 16, 32], [8, 16, 32, 64, 128], "Panel C: the values of d.")
@click.option("--beta", type=float, default=None,
              help="A fixed UCB radius in place of Prop. 2's (declared on the figures). "
                   "[default: Prop. 2's]")
def figure(out: Output, paper: bool, panel: str, **sz) -> None:
    """Dubey & Pentland (2020) Figure 1, centralized FedUCB: per-agent regret against epsilon
    (A), against t for three communication schedules (B) and for several d (C).

    Runs the protocol's maths in one process (`simulate_centralized`: the same estimators and
    privatizer as the agent processes of protocol feducb; a test checks they choose the same
    arms). Prop. 2's radius (about 500 at M = 10, epsilon = 1) swamps the reward gaps, so the
    private curves learn only with a tuned --beta, which the figures then declare. Writes
    fig1a_regret_vs_eps, fig1b_communication and fig1c_dimension (.csv, .md, .png).
    """
    for name, draw in (("A", panel_a), ("B", panel_b), ("C", panel_c)):
        if panel in (name, "all"):
            draw(sz, out)
