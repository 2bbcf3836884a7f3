"""PRIVATIZER (Dubey & Pentland 2020, Alg. 2): a tree over one party's augmented Gram matrices.

The caller inserts Q = sum [x y]^T [x y] over the rounds since its last release; the tree
returns the noisy running sum M~, whose top-left d x d block is U^ = U + H and whose last
column's first d entries are u^ = u + h (steps 10-14).

Noise is spent once per statistic: each node's noise is drawn from a source keyed by the
privatizer's noise key and the node's label (which insert, and a digest of the exact sum it
covers). The key is in the checkpoint, so a resumed run re-releases the rounds between its
checkpoint and the interruption identically when their data are the same (its peers learn
nothing new), and with noise of their own when they differ (never the noise of the other sum,
which would release the difference noise-free). The key lets whoever holds it recompute the
noise of a sum it can guess, so a checkpoint is as private as the raw sums it already holds.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.dp.accounting import PrivacyParams
from mpcbandit.dp.noise import NormalSource, keyed_source
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
    """One party's tree-based mechanism with the noise of `params` (Alg. 2 steps 2-7); its
    noise key is drawn from src (seeded: reproducible; NormalSource(): secret)."""

    def __init__(self, params: PrivacyParams, src: NormalSource):
        self.params = params
        self.noise_key = src.prg.bytes(32)
        self.tree = TreeMechanism(params.dims + 1, params.releases, params.node_noise(self._source),
                                  shift=params.shift, pad_noise=params.pad_noise(self._source))

    def _source(self, label: bytes) -> NormalSource:
        return keyed_source(self.noise_key, label)

    def state(self) -> dict:
        """The tree and the noise key (for a checkpoint, which holds the raw sums already)."""
        return {"tree": self.tree.state(), "noise_key": self.noise_key}

    def load_state(self, state: dict) -> None:
        """Go on from a `state()`: the same statistics get the same noise as before."""
        if not isinstance(state.get("noise_key"), bytes):
            raise ValueError("checkpointed privatizer was written before its noise was keyed by "
                             "what it releases (a resume could spend noise twice): start the "
                             "run afresh")
        self.tree.load_state(state["tree"])
        self.noise_key = state["noise_key"]

    def initial(self) -> tuple[np.ndarray, np.ndarray]:
        """(H, h) before any data: the empty prefix (one noise node, plus the shift)."""
        return split_release(self.tree.release())

    def privatize(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Insert Q and return (U^, u^) = noisy running sums (Alg. 2 steps 10-14)."""
        return split_release(self.tree.insert(q))
