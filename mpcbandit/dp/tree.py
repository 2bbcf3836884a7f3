"""The tree-based mechanism for private prefix sums of matrices (Dwork et al. 2010; Chan,
Shi & Song 2011), as used by Shariff & Sheffet (2018, §4) and Dubey & Pentland (2020, Alg. 2).

Item t (1-based) is a leaf of a binary tree of depth m = 1 + ceil(log2 n) over n leaves; every
node holds the sum of its leaves plus its own noise, drawn once. The prefix sum s_t is the sum
of the dyadic nodes named by the set bits of t, i.e. popcount(t) <= m nodes. The empty prefix
(before any insert) is released as one node of pure noise, so the first regularizer has the
same law as the later ones.

Given `pad_noise` (n -> the noise of n nodes in one draw), every release is built from exactly
m nodes' noise: the prefix's nodes plus m - popcount(t) nodes' worth drawn fresh (Wishart noise,
whose accuracy bounds rho_min, rho_max are stated for a sum of m draws: a prefix of fewer nodes
would fall below rho_min). Extra independent noise is post-processing: privacy is unchanged.

Each draw is named by a label: the insert that completes a node and a digest of the node's
exact sum (`node_label`). A caller that keys its noise by the label (the Privatizer does)
spends noise once per statistic: a resumed run that re-inserts the same items releases the same
sums again, identically, and a different item gets noise of its own, never the noise already
spent on another sum (which would release the difference of the two noise-free).
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable

import numpy as np

__all__ = ["TreeMechanism", "tree_depth", "node_label", "EMPTY_LABEL"]

#: the label of the empty prefix's noise (before any data)
EMPTY_LABEL = b"empty"


def tree_depth(n: int) -> int:
    """m = 1 + ceil(log2 n): the most nodes any prefix of n items is built from."""
    if n < 1:
        raise ValueError(f"tree needs at least one leaf, got {n}")
    return 1 + math.ceil(math.log2(n))


def node_label(kind: bytes, count: int, exact: np.ndarray) -> bytes:
    """The name of a draw: its kind (node, pad), the insert it belongs to and a digest of the
    exact sum it covers."""
    digest = hashlib.sha256(np.ascontiguousarray(exact, dtype=np.float64).tobytes()).digest()
    return b"%s/%d/" % (kind, count) + digest


class TreeMechanism:
    """Private running sums of (dim x dim) items; at most `capacity` inserts.

    node_noise(label) draws one node's noise, pad_noise(n, label) n nodes' worth in one draw.
    """

    def __init__(self, dim: int, capacity: int, node_noise: Callable[[bytes], np.ndarray],
                 shift: float = 0.0, pad_noise: Callable[[int, bytes], np.ndarray] | None = None):
        self.dim, self.capacity, self.pad_noise = dim, capacity, pad_noise
        self.depth = tree_depth(capacity)
        self.node_noise = node_noise
        self.shift = shift  # added as shift * I to every release (the PSD shift, or ridge)
        self.count = 0
        self._exact = [np.zeros((dim, dim)) for _ in range(self.depth)]  # p-sums alpha_j
        self._noisy = [np.zeros((dim, dim)) for _ in range(self.depth)]  # alpha_j + noise_j
        self._empty_noise: np.ndarray | None = None
        self._padding = np.zeros((dim, dim))  # fresh draws completing the current prefix to m
        self.nodes_used = 0

    def state(self) -> dict:
        """Node sums, noise and counters (for a checkpoint; never the noise generator)."""
        return {"count": self.count, "exact": self._exact, "noisy": self._noisy,
                "empty_noise": self._empty_noise, "padding": self._padding,
                "nodes_used": self.nodes_used}

    def load_state(self, state: dict) -> None:
        """Go on from a `state()` of a tree with the same dim and capacity."""
        if len(state["exact"]) != self.depth or state["count"] > self.capacity:
            raise ValueError(f"checkpointed tree (depth {len(state['exact'])}, "
                             f"{state['count']} inserts) does not fit depth {self.depth}, "
                             f"capacity {self.capacity}")
        self.count, self.nodes_used = int(state["count"]), int(state["nodes_used"])
        self._exact = [np.array(a, dtype=np.float64) for a in state["exact"]]
        self._noisy = [np.array(a, dtype=np.float64) for a in state["noisy"]]
        e = state["empty_noise"]
        self._empty_noise = None if e is None else np.array(e, dtype=np.float64)
        if "padding" not in state and self.pad_noise is not None:
            raise ValueError("checkpointed tree was written before Wishart releases were padded "
                             "to m nodes; its releases are not comparable: start the run afresh")
        self._padding = np.array(state.get("padding", np.zeros((self.dim, self.dim))), dtype=np.float64)

    def insert(self, item: np.ndarray) -> np.ndarray:
        """Add item t = count + 1 and return the released noisy prefix sum s_t (+ shift I)."""
        if self.count >= self.capacity:
            raise ValueError(f"tree mechanism full: {self.capacity} inserts were budgeted "
                             "(the privacy accounting assumes no more)")
        self.count += 1
        j = (self.count & -self.count).bit_length() - 1  # lowest set bit: the node completed now
        self._exact[j] = sum(self._exact[:j], np.zeros((self.dim, self.dim))) + item
        for i in range(j):
            self._exact[i] = np.zeros((self.dim, self.dim))
            self._noisy[i] = np.zeros((self.dim, self.dim))
        self._noisy[j] = self._exact[j] + self.node_noise(node_label(b"node", self.count, self._exact[j]))
        if self.pad_noise is not None:
            missing = self.depth - bin(self.count).count("1")
            prefix = sum((self._exact[b] for b in range(self.depth) if self.count >> b & 1),
                         np.zeros((self.dim, self.dim)))  # the release's exact sum
            self._padding = (self.pad_noise(missing, node_label(b"pad", self.count, prefix))
                             if missing else np.zeros((self.dim, self.dim)))
        return self.release()

    def release(self) -> np.ndarray:
        """The current noisy prefix sum plus shift * I, from the fewest nodes (plus the padding)."""
        bits = [j for j in range(self.depth) if self.count >> j & 1]
        padded = self.pad_noise is not None
        if not bits:
            if self._empty_noise is None:
                self._empty_noise = (self.pad_noise(self.depth, EMPTY_LABEL) if padded
                                     else self.node_noise(EMPTY_LABEL))
            total = self._empty_noise.copy()
        else:
            total = sum((self._noisy[j] for j in bits), self._padding)
        self.nodes_used = self.depth if padded else max(len(bits), 1)
        return total + self.shift * np.eye(self.dim)
