"""The synthetic linear environment of Dubey & Pentland (2020, §4.4).

theta* is fixed at random on the unit sphere (so ||theta*|| = S = 1, inside B_d(1)); each round
draws K actions of norm <= 1 (L = 1): K - 1 with <x, theta*> uniform in [0.5, 0.6] and one
optimal action with <x, theta*> uniform in [0.6, 0.7] + gap, at a random position, so the best
action leads by at least `gap` (0.1 by default: [0.7, 0.8]; gap 0 leaves the lead arbitrarily
small); the reward is y ~ Bernoulli(<x, theta*>). Each user stream (one per agent) has its
own generators for action sets and rewards, so a learner's choices never shift the stream.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.protocols import seeded_rng

__all__ = ["GapEnvironment", "env_theta"]


def env_theta(seed: int, dims: int) -> np.ndarray:
    """theta*: uniform on the unit sphere, the same for every stream of this seed."""
    v = seeded_rng(seed, f"gap-env/theta/{dims}").standard_normal(dims)
    return v / np.linalg.norm(v)


class GapEnvironment:
    """One user stream: action sets D_t (K x d), their means, Bernoulli rewards."""

    def __init__(self, seed: int, dims: int, actions: int, stream: str, gap: float = 0.1):
        if actions < 2:
            raise ValueError(f"need at least 2 actions per round, got {actions}")
        if not 0.0 <= gap <= 0.3:
            raise ValueError(f"gap {gap!r} must be in [0, 0.3] (the best mean stays <= 1)")
        self.dims, self.actions, self.gap = dims, actions, gap
        self.theta = env_theta(seed, dims)
        self._ctx = seeded_rng(seed, f"gap-env/contexts/{stream}")
        self._rew = seeded_rng(seed, f"gap-env/rewards/{stream}")

    def state(self) -> dict:
        """Positions of the two generators (for a checkpoint)."""
        return {"contexts": self._ctx.bit_generator.state, "rewards": self._rew.bit_generator.state}

    def load_state(self, state: dict) -> None:
        """Continue both streams from a `state()`."""
        self._ctx.bit_generator.state = state["contexts"]
        self._rew.bit_generator.state = state["rewards"]

    def action_set(self) -> tuple[np.ndarray, np.ndarray]:
        """(D_t as K x d, expected rewards <x, theta*> as K)."""
        k, d, rng = self.actions, self.dims, self._ctx
        means = rng.uniform(0.5, 0.6, size=k)
        means[rng.integers(k)] = rng.uniform(0.7, 0.8) - (0.1 - self.gap)
        w = rng.standard_normal((k, d))
        w -= np.outer(w @ self.theta, self.theta)  # orthogonal to theta*
        w /= np.maximum(np.linalg.norm(w, axis=1, keepdims=True), 1e-12)
        radius = rng.uniform(0.0, 1.0, size=k) * np.sqrt(1.0 - means**2)
        return means[:, None] * self.theta + radius[:, None] * w, means

    def reward(self, mean: float) -> float:
        """y ~ Bernoulli(mean)."""
        return float(self._rew.uniform() < mean)

    def every_reward(self, means: np.ndarray) -> np.ndarray:
        """The reward each action of the round would give, from the one draw `reward` makes."""
        return (self._rew.uniform() < np.asarray(means)).astype(np.float64)
