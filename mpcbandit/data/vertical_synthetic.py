"""Synthetic vertically partitioned linear-bandit stream (Cao et al. 2023, §5.1).

x_{t,a} ~ N(0, sigma^2 I_d) then l2-normalised; theta* likewise; r = x^T theta* + eps with
eps ~ N(0, 0.05). The context is split by columns, x = [x^1 ... x^M], participant j holding
the d_j columns of block j.

Each participant draws its own block from its own stream, so it never computes another
participant's features. The one thing the global l2 normalisation needs across blocks is
the block norms: a Gaussian block is its norm times an independent uniform direction, with
||g^j||^2 ~ sigma^2 chi^2_{d_j} independent across blocks, so the norms come from a shared
public stream and each participant draws its direction privately:
x^j = ||g^j|| u^j / sqrt(sum_k ||g^k||^2), exactly the law of g / ||g|| split by columns.
(The block norms are no extra leak: rotation invariance gives the AP ||Q^j x^j|| = ||x^j||.)
Rounds are drawn in chunks from per-chunk generators, so any round can be read directly.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.protocols import seeded_rng

__all__ = ["SIGMA2", "NOISE_VAR", "SyntheticParticipant", "SyntheticEnvironment"]

SIGMA2 = 0.05     # variance of the context and theta* Gaussians (§5.1)
NOISE_VAR = 0.05  # variance of the reward noise (§5.1)
CHUNK = 256       # rounds drawn at once


def _chunk_rng(seed: int, what: str, chunk: int) -> np.random.Generator:
    return seeded_rng(seed, f"o3m/synthetic/{what}/{chunk}")


def block_sq_norms(seed: int, partition: list[int], arms: int, chunk: int) -> np.ndarray:
    """Public ||g^j||^2 of every block for the rounds of one chunk, shape (CHUNK, K, M)."""
    df = np.asarray(partition, dtype=np.float64)
    return SIGMA2 * _chunk_rng(seed, "norms", chunk).chisquare(df, size=(CHUNK, arms, len(partition)))


class SyntheticParticipant:
    """Participant j's view of the stream: its own columns x^j_{t,a} for every arm."""

    def __init__(self, seed: int, partition: list[int], arms: int, j: int):
        self.seed, self.partition, self.arms, self.j = seed, list(partition), arms, j
        self.dims = self.partition[j]
        self._chunk, self._block = -1, np.empty(0)

    def features(self, t: int) -> np.ndarray:
        """x^j_{t,a} for a in [K], shape (K, d_j)."""
        chunk, i = divmod(t, CHUNK)
        if chunk != self._chunk:
            g = _chunk_rng(self.seed, f"p{self.j}", chunk).standard_normal((CHUNK, self.arms, self.dims))
            direction = g / np.linalg.norm(g, axis=-1, keepdims=True)
            sq = block_sq_norms(self.seed, self.partition, self.arms, chunk)
            scale = np.sqrt(sq[..., self.j] / sq.sum(axis=-1))
            self._chunk, self._block = chunk, direction * scale[..., None]
        return self._block[i]


class SyntheticEnvironment:
    """The simulated user stream: full contexts, theta*, noisy rewards and regret."""

    def __init__(self, seed: int, partition: list[int], arms: int):
        self.seed, self.arms = seed, arms
        self.dims = sum(partition)
        self.horizon = None  # unbounded
        self._views = [SyntheticParticipant(seed, partition, arms, j) for j in range(len(partition))]
        theta = seeded_rng(seed, "o3m/synthetic/theta").normal(0.0, np.sqrt(SIGMA2), self.dims)
        self.theta = theta / np.linalg.norm(theta)
        self._chunk, self._noise = -1, np.empty(0)

    def contexts(self, t: int) -> np.ndarray:
        """x_{t,a} for every arm, shape (K, d)."""
        return np.concatenate([v.features(t) for v in self._views], axis=1)

    def _noise_at(self, t: int) -> float:
        chunk, i = divmod(t, CHUNK)
        if chunk != self._chunk:
            self._chunk = chunk
            self._noise = _chunk_rng(self.seed, "noise", chunk).normal(0.0, np.sqrt(NOISE_VAR), CHUNK)
        return float(self._noise[i])

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        """(reward r_t, instantaneous regret) for pulling arm at round t."""
        means = self.contexts(t) @ self.theta
        return float(means[arm]) + self._noise_at(t), float(means.max() - means[arm])
