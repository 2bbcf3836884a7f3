"""Hannun et al. (2019), Figures 1, 2 and 5: the reward of the ε-greedy private bandit, as
`mpcbandit figure hannun-1`, `hannun-2` and `hannun-5`.

The curves come from the float64 reference, which picks the same arm as the secure protocol on
the same exploration draws (the default run prints its agreement; 100 % of 1,000 steps), so the
paper's reward figures are read off the reference at sizes the secure run could not reach here.
"""

from __future__ import annotations

import math

import click
import numpy as np

from mpcbandit.bandits.egreedy import draw_exploration, exploration_key, run_eps_greedy
from mpcbandit.data.mnist import mnist_present
from mpcbandit.data.tasks import make_task, mnist_dir
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    experiment_command,
    int_list,
    mean_std,
    sized_option,
)
from mpcbandit.mpc.prg import Prg

__all__ = ["data_option", "figure_1", "figure_2", "figure_5", "kind_of_data", "rewards_of"]

DIMS = 20
FIG1_EPSILONS = (0.0, 0.01, 0.1, 0.5)
#: the ε of the η sweeps (η = log(|A|/ε); ε = 0 is η = ∞, kept in the table, not on the axis)
EPSILONS = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001, 0.0)
#: where the reward figures' numbers come from (said in --help and under every table)
SIMULATED = ("a float64 simulation (bandits/egreedy.py), not the secure protocol: on the same "
             "exploration draws it picks the secure protocol's arm at almost every step (the "
             "agreement `mpcbandit run` and `bench hannun` report)")

data_option = click.option(
    "--data", type=click.Choice(["mnist", "synthetic"]), default=None, show_default=False,
    help="MNIST (from MPCBANDIT_DATA) or the synthetic 10-class task  [default: mnist when its "
         "IDX files are found, else synthetic]")


def rewards_of(kind: str, steps: int, arms: int, eps: float, seed: int) -> np.ndarray:
    """Per-step rewards of one run of the float64 reference on task `kind`."""
    data = make_task(kind, iterations=steps, dims=DIMS, arms=arms, seed=seed)
    samples = draw_exploration(Prg(exploration_key(seed)), steps, arms, eps, DIMS)
    return run_eps_greedy(data.contexts, data.rewards, samples).rewards


def kind_of_data(data: str | None) -> str:
    """The task a --data value names: mnist when its IDX files are found, else synthetic."""
    return data or ("mnist" if mnist_present(mnist_dir()) else "synthetic")


def _runs(n: int) -> str:
    return f"{n} run" if n == 1 else f"{n} runs"


def _eta(arms: int, eps: float) -> float:
    return math.log(arms / eps) if eps > 0 else math.inf


def _eta_sweep(kind: str, arms: int, steps: int, runs: int) -> list[tuple[float, float, float]]:
    """(η, mean and standard deviation over runs of the average reward) for every ε."""
    points = []
    for eps in EPSILONS:
        mean, std = mean_std(np.array([rewards_of(kind, steps, arms, eps, seed).mean()
                                       for seed in range(runs)]))
        points.append((_eta(arms, eps), float(mean), float(std)))
    return points


def _eta_figure(out: Output, stem: str, column: str, cases: list[tuple[int, str, int, int]],
                kind: str, runs: int, title: str) -> None:
    """Reward against η, one curve per case (value, label, arms, steps): table and figure
    (η = ∞, ε = 0, in the table only); error bars: standard deviation over runs."""
    rows, curves = [], []
    for value, label, arms, steps in cases:
        points = _eta_sweep(kind, arms, steps, runs)
        rows += [[value, eta, r, sd] for eta, r, sd in points]
        finite = [p for p in points if math.isfinite(p[0])]
        curves.append(Curve(label, [p[0] for p in finite], [p[1] for p in finite],
                            [p[2] for p in finite] if runs > 1 else None))
    out.table(stem, [column, "eta", "average_reward", "std"], rows, title)
    out.figure(stem, [Panel("", "η = log(|A|/ε)", "average reward", curves, logx=False)], title)


@experiment_command("hannun-1", "MNIST, 60,000 steps, 10 runs",
                    short_help="Fig. 1: average reward during training, four epsilons",
                    computed_by=SIMULATED)
@sized_option("--steps", int, 5_000, 60_000, "Steps per run (T)")
@sized_option("--runs", int, 2, 10, "Runs per ε, averaged (seeds 0..runs-1)")
@data_option
def figure_1(out: Output, paper: bool, steps: int, runs: int, data: str | None) -> None:
    """Hannun et al. (2019) Figure 1: average reward during training for ε ∈ {0, 0.01, 0.1,
    0.5}, |A| = 10, mean over runs (band: standard deviation over runs). Writes
    hannun_fig1.csv/.md/.png."""
    kind = kind_of_data(data)
    window = max(1, steps // 50)
    xs = np.arange(window, steps + 1, window)
    rows, curves = [], []
    for eps in FIG1_EPSILONS:
        runs_ = np.array([rewards_of(kind, steps, 10, eps, seed) for seed in range(runs)])
        running = np.cumsum(runs_, axis=1) / np.arange(1, steps + 1)
        mean, std = running.mean(0)[xs - 1], running.std(0)[xs - 1]
        curves.append(Curve(f"ε = {eps:g}", xs, mean, std if runs > 1 else None))
        rows += [[eps, int(t), float(m), float(s)] for t, m, s in zip(xs, mean, std)]
    title = f"Hannun et al. Fig. 1: reward during training ({kind}, |A| = 10, {_runs(runs)})"
    out.table("hannun_fig1", ["epsilon", "iteration", "average_reward", "std"], rows, title)
    out.figure("hannun_fig1", [Panel("", "iteration", "average reward so far", curves)], title)


@experiment_command("hannun-2", "MNIST, T ∈ {1,000, 10,000, 60,000}, 5 runs",
                    short_help="Fig. 2: average reward against eta, several data set sizes",
                    computed_by=SIMULATED)
@sized_option("--sizes", int_list, [500, 2_500, 5_000], [1_000, 10_000, 60_000],
              "Data set sizes T, one curve each")
@sized_option("--runs", int, 2, 5, "Runs per point, averaged")
@data_option
def figure_2(out: Output, paper: bool, sizes: list[int], runs: int, data: str | None) -> None:
    """Hannun et al. (2019) Figure 2: average reward against η = log(|A|/ε) for several data
    set sizes T, |A| = 10, mean over runs (bars: standard deviation; ε = 0, η = ∞, is in the
    table, not on the axis). Writes hannun_fig2.csv/.md/.png."""
    kind = kind_of_data(data)
    _eta_figure(out, "hannun_fig2", "T", [(t, f"T = {t:,}", 10, t) for t in sizes], kind, runs,
                f"Hannun et al. Fig. 2: reward against η ({kind}, |A| = 10, {_runs(runs)})")


@experiment_command("hannun-5", "|A| ∈ {10, 20, 40, 80}, 60,000 steps, 5 runs",
                    short_help="Fig. 5: average reward against eta, several arm counts",
                    computed_by=SIMULATED)
@sized_option("--arms", int_list, [5, 10], [10, 20, 40, 80], "Arm counts |A|, one curve each")
@sized_option("--steps", int, 5_000, 60_000, "Steps per run (T)")
@sized_option("--runs", int, 2, 5, "Runs per point, averaged")
@data_option
def figure_5(out: Output, paper: bool, arms: list[int], steps: int, runs: int,
             data: str | None) -> None:
    """Hannun et al. (2019) Figure 5: average reward against η for several arm counts; with
    MNIST the arms are K-means clusters of its features with Bernoulli rewards (σ = 1/2), as in
    the paper; mean over runs (bars: standard deviation). Writes hannun_fig5.csv/.md/.png."""
    kind = "kmeans" if kind_of_data(data) == "mnist" else "synthetic"
    _eta_figure(out, "hannun_fig5", "arms", [(a, f"|A| = {a}", a, steps) for a in arms], kind,
                runs, f"Hannun et al. Fig. 5: reward against η ({kind}, {steps:,} steps, "
                      f"{_runs(runs)})")
