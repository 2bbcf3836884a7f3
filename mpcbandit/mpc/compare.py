"""Comparisons and argmax (Hannun et al. §3, Algorithm 2 and the permutation tie-break).

``argmax`` returns a shared one-hot vector (0 fractional bits). Methods:

- ``pairwise`` (the paper, default for A ≤ 128): Alg. 2, ×γ, Alg. 2 again;
  2·(7 + ⌈log₂ A⌉) rounds at most, within 2·(7 + ⌈log₂(A−1)⌉) + 1 because the tie-break
  factor γ joins the product tree of the first pass.
- ``tree`` (tournament, default for A > 128): ⌈log₂ A⌉·8 rounds, O(A) comparisons, not A².
- ``lex`` (ours): one pass of Alg. 2 on x·2^k + γ − 1, i.e. ties broken by the same dealer
  permutation read as a lower-order digit: 7 + ⌈log₂(A−1)⌉ rounds, half the paper's;
  needs |x| < 2^(62−⌈log₂A⌉) ring units (|x| < 2^35 for L = 20, A = 100).
"""

from __future__ import annotations

import math

import numpy as np

from mpcbandit.mpc.arith import bilinear
from mpcbandit.mpc.binary import msb
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.shares import AShare

__all__ = ["less_than", "product_tree", "all_max", "argmax", "lex_limit", "ARGMAX_METHODS",
           "PAIRWISE_MAX_ARMS"]

ARGMAX_METHODS = ("auto", "pairwise", "tree", "lex")
#: "auto" uses pairwise (the paper's Algorithm 2) up to this many arms, the tree above
PAIRWISE_MAX_ARMS = 128


def _aligned(x: AShare, y: AShare) -> tuple[AShare, AShare]:
    f = max(x.frac, y.frac)
    return x.shift_frac(f), y.shift_frac(f)


def less_than(eng, x: AShare, y):
    """⟦x < y⟧ as 0/1 integers: the MSB of x − y. 7 rounds."""
    if not isinstance(y, AShare):
        return (yield from msb(eng, x - y))
    x, y = _aligned(x, y)
    return (yield from msb(eng, x - y))


def product_tree(eng, f: AShare):
    """Product over the last axis of integer shares by a binary tree: ⌈log₂ k⌉ rounds."""
    while f.shape[-1] > 1:
        k = f.shape[-1]
        h = k // 2
        prod = yield from bilinear(eng, "mul", f[..., :h], f[..., h:2 * h])
        f = AShare.concat([prod, f[..., 2 * h:]], axis=-1) if k % 2 else prod
    return f[..., 0]


def all_max(eng, x: AShare, extra: AShare | None = None, distinct: bool = False):
    """Algorithm 2: ⟦y_i⟧ = Π_j [x_i ≥ x_j] (ones at every maximum), with an optional extra
    factor per i multiplied in the same product tree. With distinct=True (no ties among
    values that can be the maximum) only the A(A−1)/2 comparisons i < j are made and
    [x_j ≥ x_i] is taken as 1 − [x_i ≥ x_j]."""
    A = x.shape[-1]
    lead = x.lead
    if distinct:
        iu, ju = np.triu_indices(A, 1)
        d = x.v[..., iu] - x.v[..., ju]                          # x_i − x_j, i < j
        lt = yield from msb(eng, AShare(d, x.frac, lead))         # [x_i < x_j]
        full = np.zeros((*x.shape[:-1], A, A), dtype=U64)
        full[..., iu, ju] = (1 - lt).v                            # [x_i ≥ x_j]
        full[..., ju, iu] = lt.v                                  # [x_j ≥ x_i] = [x_i < x_j]
        off = ~np.eye(A, dtype=bool)
        ge = AShare(full[..., off].reshape(*x.shape[:-1], A, A - 1), 0, lead)
    else:
        off = ~np.eye(A, dtype=bool)
        d = x.v[..., :, None] - x.v[..., None, :]                 # x_i − x_j
        diffs = AShare(d[..., off].reshape(*x.shape[:-1], A, A - 1), x.frac, lead)
        lt = yield from msb(eng, diffs)                           # [x_i < x_j]
        ge = 1 - lt                                               # [x_i ≥ x_j]
    if extra is not None:
        ge = AShare.concat([ge, extra.reshape(*extra.shape, 1)], axis=-1)
    return (yield from product_tree(eng, ge))


def argmax(eng, x: AShare, method: str = "auto", permutation: AShare | None = None):
    """Shared one-hot of a maximum of x over its last axis, ties broken uniformly at random:
    by the dealer's permutation, or by the caller's (shares of a permutation of 1..A of x's
    shape, e.g. one a protocol's dealer draws ahead with its other randomness)."""
    A = x.shape[-1]
    if A == 1:
        return AShare(np.full(x.shape, 1 if x.lead else 0, dtype=U64), 0, x.lead)
    if method == "auto":
        method = "pairwise" if A <= PAIRWISE_MAX_ARMS else "tree"
    if permutation is None:
        batch = int(np.prod(x.shape[:-1], dtype=np.int64))
        g = eng.material.take("perm", (A,), batch)["g"].reshape(x.shape)
        gamma = AShare(g, 0, x.lead)
    elif permutation.shape != x.shape or permutation.frac != 0:
        raise ValueError(f"permutation of shape {permutation.shape} (frac {permutation.frac}) "
                         f"for scores of shape {x.shape}: give integers of the same shape")
    else:
        gamma = permutation
    if method == "pairwise":
        y = yield from all_max(eng, x, extra=gamma)           # y ∘ γ: nonzero values distinct
        return (yield from all_max(eng, y, distinct=True))
    if method == "tree":
        return (yield from _tournament(eng, x, gamma))
    if method == "lex":
        return (yield from all_max(eng, _lexicographic(x, gamma), distinct=True))
    raise ValueError(f"unknown argmax method {method!r} (choose from {', '.join(ARGMAX_METHODS)})")


def lex_limit(frac: int, arms: int) -> float:
    """The largest |x| (a real at frac fractional bits) the lex and tree argmax order correctly
    among arms values: beyond it x·2^k wraps mod 2^64 and the winner is wrong, silently."""
    return 2.0 ** (62 - frac - math.ceil(math.log2(arms)))


def _lexicographic(x: AShare, gamma: AShare) -> AShare:
    """x·2^k + γ − 1 with 2^k ≥ A: all values distinct, ties in x ordered by the dealer's
    random permutation γ (local). Needs |x| < 2^(62−k) ring units."""
    k = math.ceil(math.log2(x.shape[-1]))
    lift = np.uint64(1) if x.lead else np.uint64(0)
    return AShare((x.v << np.uint64(k)) + gamma.v - lift, 0, x.lead)  # frac irrelevant here


def _tournament(eng, x: AShare, gamma: AShare):
    """Pairwise knockout on (x, γ) read lexicographically, so ties are broken by the random
    permutation. 8 rounds per level."""
    A = x.shape[-1]
    vals = _lexicographic(x, gamma)
    eye = np.broadcast_to(np.eye(A, dtype=U64), (*x.shape, A))
    hot = AShare(eye.copy() if x.lead else np.zeros(eye.shape, dtype=U64), 0, x.lead)
    while vals.shape[-1] > 1:
        n = vals.shape[-1]
        h = n // 2
        a, b = vals[..., :h], vals[..., h:2 * h]
        ha, hb = hot[..., :h, :], hot[..., h:2 * h, :]
        c = yield from msb(eng, b - a)                        # [a > b]: a wins
        cv = AShare(np.concatenate([c.v[..., None], np.repeat(c.v[..., None], A, axis=-1)], axis=-1),
                    0, c.lead)
        dv = AShare(np.concatenate([(a - b).v[..., None], (ha - hb).v], axis=-1), 0, c.lead)
        sel = yield from bilinear(eng, "mul", cv, dv)         # c·(a − b), c·(ha − hb)
        win_v = AShare(b.v + sel.v[..., 0], vals.frac, vals.lead)
        win_h = AShare(hb.v + sel.v[..., 1:], 0, hot.lead)
        if n % 2:
            win_v = AShare.concat([win_v, vals[..., 2 * h:]], axis=-1)
            win_h = AShare.concat([win_h, hot[..., 2 * h:, :]], axis=-2)
        vals, hot = win_v, win_h
    return hot[..., 0, :]
