"""Hannun et al. Figs. 1, 2 and 5: reward of the epsilon-greedy private bandit vs iterations
(four eps), vs eta = log(|A|/eps) for three T, and vs eta for several arm counts.

Reward curves come from the float64 reference (`--plaintext`), which picks the same arm as
the secure protocol in >= 99.9 % of steps (tests/test_hannun_secure_matches_plaintext.py).

    python scripts/hannun_fig_reward.py fig1 [--full] [--out DIR]
Writes DIR/hannun_figN.csv and .png (matplotlib optional).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.bandits.egreedy import draw_exploration, exploration_key, run_eps_greedy  # noqa: E402
from mpcbandit.data import data_root  # noqa: E402
from mpcbandit.data.tasks import make_task  # noqa: E402
from mpcbandit.mpc.prg import Prg  # noqa: E402


def have_mnist() -> bool:
    return (data_root() / "mnist" / "train-images-idx3-ubyte.gz").exists() or \
        (data_root() / "mnist" / "train-images-idx3-ubyte").exists()


def rewards_of(kind: str, steps: int, arms: int, eps: float, seed: int, **section) -> np.ndarray:
    """Per-step rewards of one run of the float64 reference."""
    data = make_task(kind, iterations=steps, dims=20, arms=arms, seed=seed)
    samples = draw_exploration(Prg(exploration_key(seed)), steps, arms, eps, 20)
    return run_eps_greedy(data.contexts, data.rewards, samples, **section).rewards


def write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    print(f"wrote {path}")


def plot(path: Path, series: dict[str, tuple[np.ndarray, np.ndarray]], xlabel: str, ylabel: str,
         title: str, logx: bool = False) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no PNG")
        return
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, (x, y) in series.items():
        ax.plot(x, y, marker="o" if len(x) < 30 else None, label=name)
    if logx:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    print(f"wrote {path}")


def fig1(args) -> None:
    """Average reward over iterations for four eps (mean over runs)."""
    steps = 60_000 if args.full else args.steps
    runs = 10 if args.full else args.runs
    kind = args.data
    arms = 10
    window = max(1, steps // 50)
    rows, series = [], {}
    for eps in (0.0, 0.01, 0.1, 0.5):
        curves = np.array([rewards_of(kind, steps, arms, eps, seed) for seed in range(runs)])
        running = np.cumsum(curves, axis=1) / np.arange(1, steps + 1)
        mean, std = running.mean(0), running.std(0)
        xs = np.arange(window, steps + 1, window)
        series[f"eps={eps:g}"] = (xs, mean[xs - 1])
        rows += [[eps, int(t), float(mean[t - 1]), float(std[t - 1])] for t in xs]
    write_csv(args.out / "hannun_fig1.csv", ["epsilon", "iteration", "average_reward", "std"], rows)
    plot(args.out / "hannun_fig1.png", series, "iteration", "average reward",
         f"Fig. 1 ({kind}, {runs} runs)")


def _eta_sweep(kind: str, arms: int, steps: int, runs: int, epsilons) -> list[tuple[float, float]]:
    out = []
    for eps in epsilons:
        r = np.mean([rewards_of(kind, steps, arms, eps, seed).mean() for seed in range(runs)])
        out.append((math.log(arms / eps) if eps > 0 else math.inf, float(r)))
    return out


EPSILONS = (1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.001, 0.0)


def fig2(args) -> None:
    """Average reward vs eta for three dataset sizes T."""
    sizes = (1_000, 10_000, 60_000) if args.full else (args.steps // 10 or 1, args.steps // 2 or 1, args.steps)
    runs = 5 if args.full else args.runs
    rows, series = [], {}
    for steps in sizes:
        pts = _eta_sweep(args.data, 10, steps, runs, EPSILONS)
        rows += [[steps, eta, r] for eta, r in pts]
        finite = [(e, r) for e, r in pts if math.isfinite(e)]
        series[f"T={steps}"] = (np.array([e for e, _ in finite]), np.array([r for _, r in finite]))
    write_csv(args.out / "hannun_fig2.csv", ["T", "eta", "average_reward"], rows)
    plot(args.out / "hannun_fig2.png", series, "eta = log(|A|/eps)", "average reward",
         "Fig. 2 (eta = inf, i.e. eps = 0, in the CSV)")


def fig5(args) -> None:
    """Average reward vs eta for several arm counts (K-means arms, Bernoulli rewards)."""
    arm_counts = (10, 20, 40, 80) if args.full else (5, 10)
    steps = 60_000 if args.full else args.steps
    runs = 5 if args.full else args.runs
    kind = "kmeans" if args.data == "mnist" else "synthetic"
    rows, series = [], {}
    for arms in arm_counts:
        pts = _eta_sweep(kind, arms, steps, runs, EPSILONS)
        rows += [[arms, eta, r] for eta, r in pts]
        finite = [(e, r) for e, r in pts if math.isfinite(e)]
        series[f"|A|={arms}"] = (np.array([e for e, _ in finite]), np.array([r for _, r in finite]))
    write_csv(args.out / "hannun_fig5.csv", ["arms", "eta", "average_reward"], rows)
    plot(args.out / "hannun_fig5.png", series, "eta = log(|A|/eps)", "average reward",
         f"Fig. 5 ({kind})")


FIGURES = {"fig1": fig1, "fig2": fig2, "fig5": fig5}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("figure", choices=sorted(FIGURES))
    p.add_argument("--full", action="store_true", help="paper size (60,000 steps, paper's run counts)")
    p.add_argument("--steps", type=int, default=5_000, help="T at reduced size")
    p.add_argument("--runs", type=int, default=2, help="runs per point at reduced size")
    p.add_argument("--data", choices=("mnist", "synthetic"), default=None,
                   help="default: mnist when the IDX files are found, else synthetic")
    p.add_argument("--out", type=Path, default=Path("runs/figures"))
    args = p.parse_args(argv)
    if args.data is None:
        args.data = "mnist" if have_mnist() else "synthetic"
    FIGURES[args.figure](args)


if __name__ == "__main__":
    main()
