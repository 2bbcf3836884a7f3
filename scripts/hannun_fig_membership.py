"""Hannun et al. Fig. 6: advantage of the membership-inference attack of Yeom et al. (2018)
on checkpoints of the epsilon-greedy bandit, for four eps.

At each checkpoint the adversary runs the policy (W_a^{-1}, b_a, eps-greedy) on examples,
estimates p_train(r | a) on training examples the model has seen and p_test(r | a) on held-out
examples (the MNIST test set), then predicts "member" for a fresh example when
p_train(r | a) > p_test(r | a). Advantage = true-positive rate - false-positive rate.
Checkpoints come from the float64 reference, which tracks the secure run (see fig_reward).

    python scripts/hannun_fig_membership.py [--full] [--out DIR]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.bandits.egreedy import draw_exploration, exploration_key, run_eps_greedy  # noqa: E402
from mpcbandit.data.tasks import make_task, mnist_dir  # noqa: E402
from mpcbandit.mpc.prg import Prg  # noqa: E402
from mpcbandit.data.mnist import mnist_present  # noqa: E402
from mpcbandit.experiments.common import Curve, Output, Panel  # noqa: E402


def play(w_inv, b, x, labels, eps, rng) -> tuple[np.ndarray, np.ndarray]:
    """The eps-greedy policy of a checkpoint on examples x: (arms, rewards)."""
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
    """TPR - FPR of the Yeom et al. attack with half of each set for estimation."""
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


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full", action="store_true", help="paper size (60,000 steps, 200 runs)")
    p.add_argument("--steps", type=int, default=5_000)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--sample", type=int, default=2_000, help="examples per set for the attack")
    p.add_argument("--data", choices=("mnist", "synthetic"), default=None)
    p.add_argument("--out", type=Path, default=Path("runs/figures"))
    args = p.parse_args(argv)
    kind = args.data or ("mnist" if mnist_present(mnist_dir()) else "synthetic")
    steps, runs = (60_000, 200) if args.full else (args.steps, args.runs)
    checkpoints = tuple(sorted({max(1, int(steps * f)) for f in (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)}))
    if kind == "mnist":
        held = make_task("mnist", iterations=10_000, dims=20, arms=10, seed=0, split="test")
    rows, series = [], {}
    for eps in (0.0, 0.01, 0.1, 0.5):
        adv = np.zeros((runs, len(checkpoints)))
        for seed in range(runs):
            if kind == "mnist":
                data = make_task("mnist", iterations=steps, dims=20, arms=10, seed=seed)
            else:
                both = make_task("synthetic", iterations=steps + 10_000, dims=20, arms=10, seed=seed)
                data = type(both)(both.contexts[:steps], both.rewards[:steps], both.expected[:steps])
                held = type(both)(both.contexts[steps:], both.rewards[steps:], both.expected[steps:])
            samples = draw_exploration(Prg(exploration_key(seed)), steps, 10, eps, 20)
            res = run_eps_greedy(data.contexts, data.rewards, samples, checkpoints=checkpoints)
            rng = np.random.default_rng(seed)  # the adversary's own coins (public simulation)
            labels, held_labels = data.rewards.argmax(1), held.rewards.argmax(1)
            for j, c in enumerate(checkpoints):
                m = rng.permutation(c)[:args.sample]
                n = rng.permutation(len(held.contexts))[:args.sample]
                adv[seed, j] = advantage(res.checkpoints[c], (data.contexts[m], labels[m]),
                                         (held.contexts[n], held_labels[n]), eps, rng, 10)
        rows += [[eps, c, float(adv[:, j].mean()), float(adv[:, j].std())]
                 for j, c in enumerate(checkpoints)]
        series[f"eps={eps:g}"] = (np.array(checkpoints), adv.mean(0))
    out = Output(args.out)
    out.table("hannun_fig6", ["epsilon", "checkpoint", "advantage", "std"], rows)
    out.figure("hannun_fig6", [Panel("", "training examples seen", "attack advantage",
                                     [Curve(k, x, y) for k, (x, y) in series.items()], logx=True)],
               f"Fig. 6 ({kind}, {runs} runs)")


if __name__ == "__main__":
    main()
