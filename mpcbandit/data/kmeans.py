"""K-means arms with Gaussian-kernel Bernoulli rewards (Hannun et al. §5): arm a pays 1 with
probability nu_a proportional to exp(-||c_a - x||^2 / (2 sigma^2))."""

from __future__ import annotations

import numpy as np

__all__ = ["kmeans", "kernel_probabilities"]


def _sq_dist(x: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.maximum((x * x).sum(1)[:, None] - 2 * x @ c.T + (c * c).sum(1)[None, :], 0.0)


def kmeans(x: np.ndarray, k: int, rng: np.random.Generator, iterations: int = 25) -> np.ndarray:
    """k centres of x by Lloyd's algorithm with k-means++ seeding (k x D)."""
    if not 1 <= k <= x.shape[0]:
        raise ValueError(f"k-means needs 1 <= k <= {x.shape[0]} points, got k = {k}")
    centres = [x[rng.integers(x.shape[0])]]
    d2 = _sq_dist(x, centres[0][None])[:, 0]
    for _ in range(1, k):
        p = d2 / d2.sum() if d2.sum() > 0 else None
        centres.append(x[rng.choice(x.shape[0], p=p)])
        d2 = np.minimum(d2, _sq_dist(x, centres[-1][None])[:, 0])
    c = np.array(centres)
    for _ in range(iterations):
        assign = np.argmin(_sq_dist(x, c), axis=1)
        counts = np.bincount(assign, minlength=k)
        sums = np.zeros_like(c)
        np.add.at(sums, assign, x)
        new = np.where(counts[:, None] > 0, sums / np.maximum(counts, 1)[:, None], c)
        if np.allclose(new, c):
            break
        c = new
    return c


def kernel_probabilities(x: np.ndarray, centres: np.ndarray, sigma: float = 0.5) -> np.ndarray:
    """nu (N x k): Gaussian-kernel weights of each point to each centre, rows summing to 1."""
    logits = -_sq_dist(x, centres) / (2 * sigma * sigma)
    w = np.exp(logits - logits.max(axis=1, keepdims=True))
    return w / w.sum(axis=1, keepdims=True)
