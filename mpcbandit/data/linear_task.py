"""The common task of `mpcbandit frontier`: one seeded linear contextual bandit every mechanism
can consume.

Each step shows K arms, arm a with features x_{t,a} in R^d; the mean reward is linear,
mu_{t,a} = <x_{t,a}, theta*>, and the reward is Bernoulli(mu_{t,a}). The features are
x_{t,a} = (1, y_{t,a}) / sqrt 2 with y_{t,a} = ALPHA w_a + (1 - ALPHA) g_{t,a}: w_a is arm a's
fixed item vector, g_{t,a} the user's context at step t (both uniform on the unit sphere of
R^{d-1}); theta* = (1, u) / sqrt 2 with u on the unit sphere. So ||x|| <= 1, ||theta*|| = 1 and
mu = (1 + <y, u>) / 2 lies in [0, 1] (the bounds the DP mechanisms assume), and the arm means
averaged over users, (1 + ALPHA <w_a, u>) / 2, differ, so a context-free bandit (SAMBA) has a best
arm to find — what it loses is the context's share.

The mechanisms read it in their own shapes: the action sets (JDP-LinUCB, FedUCB, O3M, whose
participants split the d columns), the concatenation of the K arms' features as one context of
K x d (Hannun: a weight vector per arm over it, theta_a = e_a (x) theta*, so the model is exact),
and the mean of each arm over users (SAMBA). Steps are drawn in chunks from per-chunk generators,
so any step of any stream (one per user population: "users", "agent0", ...) is read directly and
every mechanism sees the same users at the same step.

Rewards are Bernoulli(mu) — [U_t < mu] with one uniform U_t a step — or Gaussian, mu + s N_t with
one standard normal N_t a step (`rewards = "gaussian"`, s = `reward_std`): one draw a step shared
by the arms, so whichever arm a mechanism pulls at step t, it sees the same reward.
"""

from __future__ import annotations

import functools

import numpy as np

from mpcbandit.protocols import seeded_rng

__all__ = ["ALPHA", "REWARDS", "USERS", "LinearTask", "linear_task"]

ALPHA = 0.5    # the item's share of y (the rest is the user's context)
CHUNK = 256    # steps drawn at once
USERS = "users"  # the stream one learner serves (FedUCB's agent i serves "agent{i}")
REWARDS = ("bernoulli", "gaussian")


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


class LinearTask:
    """theta*, the arms' item vectors, and every stream's features, means and rewards."""

    def __init__(self, seed: int, dims: int, arms: int, rewards: str = "bernoulli",
                 reward_std: float = 0.1):
        if dims < 2:
            raise ValueError(f"the linear task needs d >= 2 features (one is constant), got {dims}")
        if arms < 2:
            raise ValueError(f"the linear task needs at least 2 arms, got {arms}")
        if rewards not in REWARDS or reward_std < 0:
            raise ValueError(f"rewards {rewards!r} (one of {', '.join(REWARDS)}), reward_std "
                             f"{reward_std} (>= 0)")
        self.seed, self.dims, self.arms = seed, dims, arms
        self.rewards, self.reward_std = rewards, reward_std
        rng = seeded_rng(seed, f"linear-task/{dims}/{arms}/public")
        self.u = _unit(rng.standard_normal(dims - 1))
        self.items = _unit(rng.standard_normal((arms, dims - 1)))
        self.theta = np.concatenate([[1.0], self.u]) / np.sqrt(2.0)

    def arm_means(self) -> np.ndarray:
        """Each arm's mean reward over users (E g = 0): what a context-free bandit can learn."""
        return (1.0 + ALPHA * self.items @ self.u) / 2.0

    @functools.lru_cache(maxsize=8)
    def _chunk(self, stream: str, chunk: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = seeded_rng(self.seed, f"linear-task/{self.dims}/{self.arms}/{stream}/{chunk}")
        g = _unit(rng.standard_normal((CHUNK, self.arms, self.dims - 1)))
        y = ALPHA * self.items + (1.0 - ALPHA) * g
        x = np.concatenate([np.ones((CHUNK, self.arms, 1)), y], axis=2) / np.sqrt(2.0)
        uniform = rng.random(CHUNK)  # drawn first either way: Bernoulli runs stay as they were
        draws = rng.standard_normal(CHUNK) if self.rewards == "gaussian" else uniform
        return x, x @ self.theta, draws

    def reward_of(self, means: np.ndarray | float, draw: np.ndarray | float) -> np.ndarray:
        """The reward of arms with these means at a step with this draw (the step's U_t or N_t)."""
        if self.rewards == "gaussian":
            return means + self.reward_std * np.asarray(draw)
        return (np.asarray(draw) < means).astype(np.float64)

    def step(self, stream: str, t: int) -> tuple[np.ndarray, np.ndarray, float]:
        """(features K x d, means K, the step's draw) of step t (from 0) of a stream."""
        chunk, i = divmod(t, CHUNK)
        x, means, draws = self._chunk(stream, chunk)
        return x[i], means[i], float(draws[i])

    def steps(self, stream: str, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps 0 .. count - 1 of a stream: features (count x K x d), means (count x K) and
        the rewards of every arm (count x K)."""
        parts = [self._chunk(stream, c) for c in range(-(-count // CHUNK))]
        x, means, draws = (np.concatenate([p[k] for p in parts])[:count] for k in range(3))
        return x, means, self.reward_of(means, draws[:, None])

    def means(self, stream: str, count: int) -> np.ndarray:
        """mu_{t,a} of the first count steps (count x K)."""
        return self.steps(stream, count)[1]


@functools.lru_cache(maxsize=4)
def linear_task(seed: int, dims: int, arms: int, rewards: str = "bernoulli",
                reward_std: float = 0.1) -> LinearTask:
    """The task of (seed, dims, arms, rewards), shared by the parties of an in-process run."""
    return LinearTask(seed, dims, arms, rewards, reward_std)
