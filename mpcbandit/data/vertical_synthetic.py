"""Synthetic vertically partitioned linear-bandit stream (Cao et al. 2023, §5.1).

x_{t,a} ~ N(0, sigma^2 I_d) then l2-normalised; theta* likewise; r = x^T theta* + eps with
eps ~ N(0, 0.05), the 0.05 read as a standard deviation by default (the reading that gives the
paper's partial/central regret ratio above 10; as a variance it is about 4), or a variance.
The context is split by columns, x = [x^1 ... x^M], participant j holding the d_j columns of
block j.

Each participant draws its own block from its own stream, so it never computes another
participant's features. A Gaussian block is its norm times an independent uniform direction,
so g/||g|| split by columns is x^j = sqrt(w_j) u^j with u^j uniform on the sphere of R^{d_j}
(drawn privately by participant j) and the block shares w = (||g^j||^2 / ||g||^2)_j ~
Dirichlet(d_1/2, ..., d_M/2), independent of the directions (sigma^2 cancels). The shares come
from a public stream, built as a balanced binary tree of Beta splits (Dirichlet aggregation:
a group's total share and the split within it are independent Betas), so participant j reads
only the log2(M) splits on its path. (The shares are no extra leak: rotation invariance gives
the AP ||Q^j x^j|| = ||x^j|| anyway.) Rounds are drawn in chunks from per-chunk generators, so
any round can be read directly; chunks hold at most ~2^20 numbers per participant.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.protocols import seeded_rng

__all__ = ["SIGMA2", "NOISE", "NOISE_READINGS", "noise_std", "SyntheticParticipant",
           "SyntheticEnvironment"]

SIGMA2 = 0.05     # variance of the context and theta* Gaussians (§5.1)
NOISE = 0.05      # the reward noise N(0, 0.05) as printed (§5.1)
NOISE_READINGS = ("std", "variance")
MAX_CHUNK = 256   # rounds drawn at once, fewer when K x d is large


def noise_std(reading: str) -> float:
    """The reward noise's standard deviation under a reading of the paper's N(0, 0.05)."""
    if reading not in NOISE_READINGS:
        raise ValueError(f"unknown noise reading {reading!r} (one of {', '.join(NOISE_READINGS)})")
    return NOISE if reading == "std" else float(np.sqrt(NOISE))


def chunk_rounds(arms: int, dims: int) -> int:
    """Rounds per chunk: public (same for every party), at most ~2^20 numbers per draw."""
    return max(1, min(MAX_CHUNK, 2**20 // (arms * dims)))


def _chunk_rng(seed: int, what: str, chunk: int) -> np.random.Generator:
    return seeded_rng(seed, f"o3m/synthetic/{what}/{chunk}")


def block_shares(seed: int, partition: list[int], shape: tuple[int, int], chunk: int,
                 only: int | None = None) -> np.ndarray:
    """Dirichlet(d/2) shares ||g^j||^2/||g||^2 of one chunk, shape (rounds, K, M).

    A balanced tree of Beta splits of the participants' index range; with only = j just the
    splits on j's path are drawn (the other columns stay 0), giving the same w_j.
    """
    out = np.zeros(shape + (len(partition),))

    def split(lo: int, hi: int, mass: np.ndarray) -> None:
        if hi - lo == 1:
            out[..., lo] = mass
            return
        mid = (lo + hi) // 2
        left, right = sum(partition[lo:mid]), sum(partition[mid:hi])
        frac = _chunk_rng(seed, f"shares/{lo}-{mid}-{hi}", chunk).beta(left / 2, right / 2, size=shape)
        if only is None or only < mid:
            split(lo, mid, mass * frac)
        if only is None or only >= mid:
            split(mid, hi, mass * (1.0 - frac))

    split(0, len(partition), np.ones(shape))
    return out


class SyntheticParticipant:
    """Participant j's view of the stream: its own columns x^j_{t,a} for every arm."""

    def __init__(self, seed: int, partition: list[int], arms: int, j: int):
        self.seed, self.partition, self.arms, self.j = seed, list(partition), arms, j
        self.dims = self.partition[j]
        self.chunk = chunk_rounds(arms, sum(self.partition))
        self._chunk, self._block = -1, np.empty(0)

    def features(self, t: int) -> np.ndarray:
        """x^j_{t,a} for a in [K], shape (K, d_j)."""
        chunk, i = divmod(t, self.chunk)
        if chunk != self._chunk:
            shape = (self.chunk, self.arms)
            g = _chunk_rng(self.seed, f"p{self.j}", chunk).standard_normal(shape + (self.dims,))
            direction = g / np.linalg.norm(g, axis=-1, keepdims=True)
            share = block_shares(self.seed, self.partition, shape, chunk, only=self.j)[..., self.j]
            self._chunk, self._block = chunk, direction * np.sqrt(share)[..., None]
        return self._block[i]


class SyntheticEnvironment:
    """The simulated user stream: full contexts, theta*, noisy rewards and regret."""

    def __init__(self, seed: int, partition: list[int], arms: int, noise: str = "std"):
        self.seed, self.arms, self.noise_std = seed, arms, noise_std(noise)
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
        chunk, i = divmod(t, MAX_CHUNK)
        if chunk != self._chunk:
            self._chunk = chunk
            self._noise = _chunk_rng(self.seed, "noise", chunk).normal(0.0, self.noise_std, MAX_CHUNK)
        return float(self._noise[i])

    def every_arm(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(every arm's reward, every arm's mean) at round t: a full-feedback row."""
        means = self.contexts(t) @ self.theta
        return means + self._noise_at(t), means

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        """(reward r_t, instantaneous regret) for pulling arm at round t."""
        means = self.contexts(t) @ self.theta
        return float(means[arm]) + self._noise_at(t), float(means.max() - means[arm])
