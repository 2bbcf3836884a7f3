"""MNIST as a contextual bandit, the real-data option of `mpcbandit frontier` (Hannun et al. §5).

A user is a training image, read as its D unit-norm principal components z (mnist.py); the 10
arms are the digits and pulling the true digit earns 1, any other 0. Hannun's protocol reads z
itself with a weight vector per arm; a mechanism that reads action sets (O3M, JDP-LinUCB, FedUCB)
sees arm a as x_{t,a} = z_t (x) e_a, column j K + a = z_j (10 D features, norm 1), so a linear
model per arm is one linear model over the action features, and a participant holding components
j0 .. j1 of z holds the contiguous columns j0 K .. j1 K. Stream "users" is the order Hannun's
`data = "mnist"` reads (the same images at the same steps); any other stream ("agent0", ...) is
another seeded order of the same images.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from mpcbandit.data.linear_task import USERS
from mpcbandit.data.mnist import cached_features
from mpcbandit.protocols import seeded_rng

__all__ = ["ARMS", "MnistTask", "mnist_task", "user_order"]

ARMS = 10


def user_order(seed: int, stream: str, images: int, split: str = "train") -> np.ndarray:
    """The order in which a stream's users (images) arrive: a seeded permutation."""
    purpose = f"hannun/order/{split}" if stream == USERS else f"mnist-task/{split}/{stream}"
    return seeded_rng(seed, purpose).permutation(images)


class MnistTask:
    """MNIST's training images as users, their digits as the arms' 0/1 rewards."""

    arms = ARMS

    def __init__(self, seed: int, components: int, directory: str | Path):
        self.seed, self.components, self.dims = seed, components, components * ARMS
        self.z, self.labels = cached_features(directory, components, "train")

    def arm_means(self) -> np.ndarray:
        """Each digit's share of the users: what a context-free bandit can learn."""
        return np.bincount(self.labels, minlength=ARMS) / len(self.labels)

    @functools.lru_cache(maxsize=8)
    def _order(self, stream: str) -> np.ndarray:
        return user_order(self.seed, stream, len(self.labels))

    def _users(self, stream: str, t: int, count: int) -> np.ndarray:
        if t + count > len(self.labels):
            raise ValueError(f"MNIST has {len(self.labels)} training images: no step "
                             f"{t + count - 1} of stream {stream!r}")
        return self._order(stream)[t:t + count]

    def step(self, stream: str, t: int) -> tuple[np.ndarray, np.ndarray, float]:
        """(features K x 10 D, means K: 1 for the digit, the step's draw: none needed)."""
        i = self._users(stream, t, 1)[0]
        return np.kron(self.z[i], np.eye(ARMS)), np.eye(ARMS)[self.labels[i]], 0.0

    def reward_of(self, means: np.ndarray | float, draw: np.ndarray | float) -> np.ndarray:
        """The reward is the mean: 1 for the true digit, else 0."""
        return np.asarray(means, dtype=np.float64)

    def means(self, stream: str, count: int) -> np.ndarray:
        """The first count users' one-hot digits (count x K)."""
        return np.eye(ARMS)[self.labels[self._users(stream, 0, count)]]


@functools.lru_cache(maxsize=4)
def mnist_task(seed: int, components: int, directory: str) -> MnistTask:
    """The MNIST task of (seed, D, directory), shared by the parties of an in-process run."""
    return MnistTask(seed, components, directory)
