"""Hannun et al. (2019) Figure 6, `mpcbandit figure hannun-6`: the advantage of the
membership-inference attack of Yeom et al. (2018) on checkpoints of the ε-greedy bandit.

At each checkpoint the adversary runs the policy (W_a⁻¹, b_a, ε-greedy) on examples, estimates
p_train(r | a) on training examples the model has seen and p_test(r | a) on held-out examples
(the MNIST test set), then predicts "member" for a fresh example when p_train(r | a) >
p_test(r | a). Advantage = true-positive rate − false-positive rate. Checkpoints come from the
float64 reference, which picks the secure run's arms (`mpcbandit figure hannun-1`).
"""

from __future__ import annotations

import click
import numpy as np

from mpcbandit.bandits.egreedy import draw_exploration, exploration_key, run_eps_greedy
from mpcbandit.data.tasks import make_task
from mpcbandit.experiments.common import Curve, Output, Panel, experiment_command, sized_option
from mpcbandit.experiments.hannun import DIMS, FIG1_EPSILONS, data_option, kind_of_data
from mpcbandit.mpc.prg import Prg

__all__ = ["advantage", "figure_6"]

ARMS = 10
HELD_OUT = 10_000


def play(w_inv, b, x, labels, eps, rng) -> tuple[np.ndarray, np.ndarray]:
    """The ε-greedy policy of a checkpoint on examples x: (arms, rewards)."""
    w = np.einsum("ade,ae->ad", w_inv, b)
    s = x @ w.T
    s = s + rng.random(s.shape) * 1e-12 * (s == s.max(1, keepdims=True))  # random ties
    arms = np.argmax(s, axis=1)
    explore = rng.random(len(x)) < eps
    arms[explore] = rng.integers(0, w.shape[0], explore.sum())
    return arms, (arms == labels).astype(np.int64)


def conditional(arms, rewards, n_arms) -> np.ndarray:
    """p(r = 1 | a), Laplace-smoothed."""
    hits = np.bincount(arms, weights=rewards, minlength=n_arms)
    return (hits + 1) / (np.bincount(arms, minlength=n_arms) + 2)


def advantage(model, members, nonmembers, eps, rng, n_arms) -> float:
    """TPR − FPR of the Yeom et al. attack, half of each set used for estimation."""
    (xm, ym), (xn, yn) = members, nonmembers
    hm, hn = len(xm) // 2, len(xn) // 2
    p_train = conditional(*play(*model, xm[:hm], ym[:hm], eps, rng), n_arms)
    p_test = conditional(*play(*model, xn[:hn], yn[:hn], eps, rng), n_arms)

    def guess(x, y):
        a, r = play(*model, x, y, eps, rng)
        pt = np.where(r == 1, p_train[a], 1 - p_train[a])
        ph = np.where(r == 1, p_test[a], 1 - p_test[a])
        return pt > ph

    return float(guess(xm[hm:], ym[hm:]).mean() - guess(xn[hn:], yn[hn:]).mean())


def _train_and_held_out(kind: str, steps: int, seed: int):
    """The run's training examples and examples it never sees (MNIST's test set)."""
    if kind == "mnist":
        return (make_task("mnist", iterations=steps, dims=DIMS, arms=ARMS, seed=seed),
                make_task("mnist", iterations=HELD_OUT, dims=DIMS, arms=ARMS, seed=0,
                          split="test"))
    both = make_task("synthetic", iterations=steps + HELD_OUT, dims=DIMS, arms=ARMS, seed=seed)
    cut = lambda s: type(both)(both.contexts[s], both.rewards[s], both.expected[s])  # noqa: E731
    return cut(slice(None, steps)), cut(slice(steps, None))


@experiment_command("hannun-6", "MNIST, 60,000 steps, 200 runs",
                    short_help="Fig. 6: membership-inference advantage during training",
                    computed_by=("checkpoints of a float64 simulation (bandits/egreedy.py), not "
                                 "of the secure protocol, whose arms it picks at almost every "
                                 "step on the same exploration draws"))
@sized_option("--steps", int, 5_000, 60_000, "Steps per run (T)")
@sized_option("--runs", int, 3, 200, "Runs per ε, averaged (seeds 0..runs-1)")
@click.option("--sample", type=click.IntRange(min=4), default=2_000,
              help="Examples per set (members, non-members) the attack uses.")
@data_option
def figure_6(out: Output, paper: bool, steps: int, runs: int, sample: int,
             data: str | None) -> None:
    """Hannun et al. (2019) Figure 6: advantage of the membership-inference attack of Yeom et
    al. (2018) at checkpoints of training (0.1 % to 100 % of T), for ε ∈ {0, 0.01, 0.1, 0.5},
    |A| = 10 (band: standard deviation over runs). Writes hannun_fig6.csv/.md/.png."""
    kind = kind_of_data(data)
    # the paper's "early stages" come before 1 % of 60,000 examples: start at 0.1 % of T
    fractions = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
    checkpoints = sorted({max(1, int(steps * f)) for f in fractions})
    rows, curves = [], []
    for eps in FIG1_EPSILONS:
        adv = np.zeros((runs, len(checkpoints)))
        for seed in range(runs):
            train, held = _train_and_held_out(kind, steps, seed)
            samples = draw_exploration(Prg(exploration_key(seed)), steps, ARMS, eps, DIMS)
            res = run_eps_greedy(train.contexts, train.rewards, samples, checkpoints=checkpoints)
            rng = np.random.default_rng(seed)  # the adversary's own coins (a public simulation)
            labels, held_labels = train.rewards.argmax(1), held.rewards.argmax(1)
            for j, c in enumerate(checkpoints):
                m = rng.permutation(c)[:sample]
                n = rng.permutation(len(held.contexts))[:sample]
                adv[seed, j] = advantage(res.checkpoints[c], (train.contexts[m], labels[m]),
                                         (held.contexts[n], held_labels[n]), eps, rng, ARMS)
        mean, std = adv.mean(0), adv.std(0)
        rows += [[eps, c, float(m), float(s)] for c, m, s in zip(checkpoints, mean, std)]
        curves.append(Curve(f"ε = {eps:g}", checkpoints, mean, std if runs > 1 else None))
        click.echo(f"ε = {eps:g}: advantage {100 * mean[0]:.2f} % after {checkpoints[0]:,} "
                   f"examples, {100 * mean[-1]:.2f} % after {checkpoints[-1]:,}")
    title = (f"Hannun et al. Fig. 6: membership-inference advantage ({kind}, {steps:,} steps, "
             f"{runs} run{'s' * (runs != 1)})")
    out.table("hannun_fig6", ["epsilon", "checkpoint", "advantage", "std"], rows, title)
    out.figure("hannun_fig6", [Panel("", "training examples seen", "attack advantage", curves,
                                     logx=True)], title)
