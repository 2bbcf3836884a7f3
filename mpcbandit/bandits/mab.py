"""Bernoulli multi-armed bandits of SAMBA (Ciucanu et al. 2022, Fig. 3/4) as plug-ins.

An algorithm is the pair of Theorem 1: ``compute_score`` (data-owner side, from that arm's own
s_i, n_i and local variables only) and ``select_arm`` (Comp side, from the permuted masked
scores only), run for ``iterations`` (nb_A) rounds per step; ``update`` lets a data owner use
the bit of a non-final iteration (Pursuit, §4.2). Register new ones with ``register``.
``play_standard`` is the non-federated algorithm of Fig. 3 over the same plug-ins and seeds.

Scores are computed with Python's ``math`` on scalars so that a data owner and the
single-process reference produce bit-identical floats.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Callable

import numpy as np

__all__ = ["ArmState", "Algorithm", "ALGORITHMS", "register", "make_algorithm",
           "argmax_position", "matching_position", "uniform_position", "pull", "play_standard"]


@dataclass
class ArmState:
    """What data owner i keeps: s_i (sum of rewards), n_i (pulls) and local variables."""

    s: int = 0
    n: int = 0
    p: float = 0.0                          # Pursuit's p_i
    rng: np.random.Generator | None = None  # Thompson's own Beta sampler


def argmax_position(values: list[float]) -> int:
    """First position of the largest value (ties go to the earliest, i.e. to sigma_t)."""
    return values.index(max(values))


def matching_position(values: list[float], u: float) -> int:
    """Position drawn with probability values[j] / sum(values), by the uniform u."""
    cum = list(accumulate(values))
    return min(bisect_right(cum, u * cum[-1]), len(values) - 1)


class Algorithm:
    """One bandit algorithm as SAMBA plug-ins; subclasses override the score and selection."""

    name = ""
    iterations = 1        # nb_A
    explores = False      # epsilon-greedy: some steps are uniform exploration (§5.4)
    log_scores = False    # scores are logarithms: masked by an offset, compared after exp

    def __init__(self, epsilon: float = 0.1, tau: float = 0.1, beta: float = 0.1):
        self.epsilon, self.tau, self.beta = epsilon, tau, beta

    def init_arm(self, arm: ArmState, arms: int) -> None:
        """Local variables after the initial pull (Fig. 3)."""

    def epsilon_at(self, t: int) -> float:
        """Exploration probability at step t."""
        return 0.0

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        """ComputeScore(A, t, l, s_i, n_i): the data owner's score at iteration l."""
        raise NotImplementedError

    def update(self, l: int, t: int, arm: ArmState, bit: int) -> None:
        """Use the bit of iteration l < nb_A (only Pursuit does)."""

    def select_arm(self, l: int, t: int, values: list[float], u: float) -> int:
        """SelectArm(A, t, l, V): a position in the permuted list V; u is Comp's uniform."""
        return argmax_position(values)


ALGORITHMS: dict[str, type[Algorithm]] = {}


def register(cls: type[Algorithm]) -> type[Algorithm]:
    """Make cls available by its name (class decorator)."""
    ALGORITHMS[cls.name] = cls
    return cls


def make_algorithm(name: str, **params: float) -> Algorithm:
    """The registered algorithm called name with its parameters."""
    if name not in ALGORITHMS:
        raise KeyError(f"unknown bandit algorithm {name!r} (known: {', '.join(sorted(ALGORITHMS))})")
    return ALGORITHMS[name](**params)


@register
class EpsilonGreedy(Algorithm):
    """argmax of empirical means; a uniform arm with probability epsilon."""

    name = "epsilon-greedy"
    explores = True

    def epsilon_at(self, t: int) -> float:
        return self.epsilon

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        return arm.s / arm.n


@register
class EpsilonDecreasing(EpsilonGreedy):
    """epsilon-greedy with epsilon_t = 1 / log2(t), as in the authors' prototype."""

    name = "epsilon-decreasing"

    def epsilon_at(self, t: int) -> float:
        return min(1.0, 1.0 / math.log2(t))


@register
class Ucb(Algorithm):
    """UCB1: argmax of mean + sqrt(2 ln t / n_i)."""

    name = "ucb"

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        return arm.s / arm.n + math.sqrt(2.0 * math.log(t) / arm.n)


@register
class Thompson(Algorithm):
    """Thompson sampling: argmax of theta_i ~ Beta(s_i + 1, n_i - s_i + 1)."""

    name = "thompson"

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        return float(arm.rng.beta(arm.s + 1, arm.n - arm.s + 1))


@register
class Softmax(Algorithm):
    """Boltzmann exploration: arm i with probability proportional to exp(mean_i / tau)."""

    name = "softmax"
    log_scores = True  # exp(mean / tau) overflows for tau below ~1/709: subtract the max first

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        return arm.s / arm.n / self.tau

    def select_arm(self, l: int, t: int, values: list[float], u: float) -> int:
        top = max(values)
        return matching_position([math.exp(v - top) for v in values], u)


@register
class Pursuit(Algorithm):
    """Pursuit (§4.2, nb_A = 2): argmax of means moves p_i by beta, then match on p_i."""

    name = "pursuit"
    iterations = 2

    def init_arm(self, arm: ArmState, arms: int) -> None:
        arm.p = 1.0 / arms

    def compute_score(self, l: int, t: int, arm: ArmState) -> float:
        return arm.s / arm.n if l == 1 else arm.p

    def update(self, l: int, t: int, arm: ArmState, bit: int) -> None:
        arm.p += self.beta * (bit - arm.p)

    def select_arm(self, l: int, t: int, values: list[float], u: float) -> int:
        return argmax_position(values) if l == 1 else matching_position(values, u)


def uniform_position(u: float, k: int) -> int:
    """An exploration step's position in the permuted list, from Comp's own uniform u.

    Comp draws it (as in the authors' prototype): a fixed position would name the pulled arm
    to the Controller, which knows the permutation.
    """
    return min(int(u * k), k - 1)


def pull(mean: float, u: float) -> int:
    """Bernoulli(mean) reward from the uniform u of this arm and step."""
    return 1 if u < mean else 0


Rows = Callable[[int], object]


def play_standard(alg: Algorithm, reward_of: list[Callable[[int, int], int]], budget: int, *,
                  explore_u: Rows, sigma: list[Rows], select_u: list[Rows],
                  thompson: list[np.random.Generator]) -> tuple[list[int], list[int]]:
    """Fig. 3 with A's strategy; returns the arm pulled and the reward at each step 1..N.

    reward_of[i](t, n) is arm i's reward when pulled at step t for the n-th time (a data owner's
    source). Ties and the order of a probability matching follow the permutation
    sigma[l-1](t), and exploration picks the arm at the position Comp draws from select_u: the
    randomness of the federated run, with the same seeds (Theorem 2).
    """
    k = len(reward_of)
    state = [ArmState(rng=thompson[i]) for i in range(k)]
    arms, rewards = [], []
    for i in range(k):  # t = 1..K: pull each arm once
        r = reward_of[i](i + 1, 1)
        state[i].s, state[i].n = r, 1
        alg.init_arm(state[i], k)
        arms.append(i)
        rewards.append(r)
    for t in range(k + 1, budget + 1):
        explore = alg.explores and explore_u(t) <= alg.epsilon_at(t)
        for l in range(1, alg.iterations + 1):
            perm = sigma[l - 1](t)
            if explore:
                chosen = int(perm[uniform_position(select_u[l - 1](t), k)])
            else:
                scores = [alg.compute_score(l, t, a) for a in state]
                chosen = int(perm[alg.select_arm(l, t, [scores[i] for i in perm], select_u[l - 1](t))])
            if l < alg.iterations:
                for i, a in enumerate(state):
                    alg.update(l, t, a, int(i == chosen))
        r = reward_of[chosen](t, state[chosen].n + 1)
        state[chosen].s += r
        state[chosen].n += 1
        arms.append(chosen)
        rewards.append(r)
    return arms, rewards
