"""A synthetic classification bandit needing no download: A class centres on the unit
sphere in D dimensions, contexts = noisy centres re-normalised, reward 1 for the true class
(the shape of the MNIST task of Hannun et al. §5)."""

from __future__ import annotations

import numpy as np

__all__ = ["synthetic_classes"]


def synthetic_classes(n: int, dims: int, arms: int, rng: np.random.Generator,
                      noise: float = 0.35) -> tuple[np.ndarray, np.ndarray]:
    """(unit-norm contexts n x dims, labels n in 0..arms-1)."""
    centres = rng.standard_normal((arms, dims))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, arms, size=n)
    x = centres[labels] + noise * rng.standard_normal((n, dims)) / np.sqrt(dims)
    return x / np.linalg.norm(x, axis=1, keepdims=True), labels
