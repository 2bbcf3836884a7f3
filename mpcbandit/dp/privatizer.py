"""PRIVATIZER (Dubey & Pentland 2020, Alg. 2): a tree over one party's augmented Gram matrices.

The caller inserts Q = sum [x y]^T [x y] over the rounds since its last release; the tree
returns the noisy running sum M~, whose top-left d x d block is U^ = U + H and whose last
column's first d entries are u^ = u + h (steps 10-14).
"""

from __future__ import annotations

import numpy as np

from mpcbandit.dp.accounting import PrivacyParams
from mpcbandit.dp.noise import NormalSource
from mpcbandit.dp.tree import TreeMechanism

__all__ = ["Privatizer", "augmented_gram", "bounded_rows", "split_release"]


def bounded_rows(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The rows [x_t y_t] the noise is calibrated for (accounting: ||x|| <= L = 1, |y| <= B = 1):
    an x outside the unit ball is scaled onto it and y clipped to [-1, 1] (Gaussian rewards can
    leave it), so no user's contribution exceeds the sensitivity the privacy rests on."""
    x = np.atleast_2d(np.asarray(xs, dtype=np.float64))
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1.0)
    return np.column_stack([x, np.clip(np.atleast_1d(ys), -1.0, 1.0)])


def augmented_gram(xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """sum_t [x_t y_t]^T [x_t y_t] for rows x_t of xs (n x d) and rewards ys (n,), bounded."""
    a = bounded_rows(xs, ys)
    return a.T @ a


def split_release(released: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(U^, u^) from a released (d+1) x (d+1) matrix."""
    d = released.shape[0] - 1
    u_hat = released[:d, :d]
    return (u_hat + u_hat.T) / 2, released[:d, d].copy()


class Privatizer:
    """One party's tree-based mechanism with the noise of `params` (Alg. 2 steps 2-7)."""

    def __init__(self, params: PrivacyParams, src: NormalSource):
        self.params, self.src = params, src
        self.tree = TreeMechanism(params.dims + 1, params.releases, params.node_noise(src),
                                  shift=params.shift, pad_noise=params.pad_noise(src))

    def state(self) -> dict:
        """The tree and how far its noise stream has been drawn (never the noise seed)."""
        return {"tree": self.tree.state(), "noise_position": self.src.prg.position}

    def load_state(self, state: dict, same_noise: bool) -> None:
        """Go on from a `state()`; same_noise: the source is seeded as before, so continue its
        stream where it stopped (else the noise to come is fresh)."""
        self.tree.load_state(state["tree"])
        if same_noise:
            self.src.seek(state["noise_position"])

    def initial(self) -> tuple[np.ndarray, np.ndarray]:
        """(H, h) before any data: the empty prefix (one noise node, plus the shift)."""
        return split_release(self.tree.release())

    def privatize(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Insert Q and return (U^, u^) = noisy running sums (Alg. 2 steps 10-14)."""
        return split_release(self.tree.insert(q))
