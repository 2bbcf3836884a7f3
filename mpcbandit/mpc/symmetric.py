"""Shared symmetric matrices kept by their upper triangles.

A matrix updated by symmetric terms (W^{-1} under Sherman–Morrison) drifts from symmetry when
each entry is truncated on its own. Keeping only the upper triangle E = D(D+1)/2 and mirroring
it share by share (``mirror``) keeps the shared value exactly symmetric; ``matvec`` multiplies
such a matrix by a vector opening the triangle only (E + 2E ring elements instead of D² + D),
and ``outer_upper`` gives the triangle of x xᵀ.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc.arith import bilinear
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.truncation import rescale

__all__ = ["triangle", "upper", "mirror", "matvec", "outer_upper"]


class _Triangles(dict):
    """D -> (rows, cols) of the upper triangle, its mirror map (D x D positions into the
    triangle) and the 0/1 matrix (2E x D) that sums w_pq x_q into u_p and w_pq x_p into u_q
    (the diagonal once)."""

    def __missing__(self, d: int):
        rows, cols = np.triu_indices(d)
        e = len(rows)
        pos = np.zeros((d, d), dtype=np.int64)
        pos[rows, cols] = np.arange(e)
        pos[cols, rows] = np.arange(e)
        sums = np.zeros((e, 2, d), dtype=U64)
        sums[np.arange(e), 0, rows] = 1
        sums[np.arange(e), 1, cols] = np.where(rows != cols, 1, 0)
        self[d] = (rows, cols, pos, sums.reshape(2 * e, d))
        return self[d]


_TRIANGLES = _Triangles()


def triangle(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the upper triangle of a D x D matrix, row by row."""
    return _TRIANGLES[d][:2]


def upper(m: AShare) -> AShare:
    """The upper triangles (..., E) of shared D x D matrices (..., D, D)."""
    rows, cols = triangle(m.shape[-1])
    return m[..., rows, cols]


def mirror(tri: AShare, d: int) -> AShare:
    """The D x D matrices whose upper triangles (..., E) are given, mirrored share by share."""
    return tri[..., _TRIANGLES[d][2]]


def matvec(eng, m: AShare, x: AShare):
    """m x for exactly symmetric shared m (..., D, D) and x (D,): the products w_pq (x_q, x_p)
    of every upper entry, exact, summed locally and truncated once per entry of the result
    (D + 1 times fewer truncations than one per product)."""
    d = x.shape[0]
    _, _, _, sums = _TRIANGLES[d]
    tri = upper(m)                                                     # (..., E)
    rows, cols = triangle(d)
    pair = AShare(np.stack([x.v[cols], x.v[rows]], axis=-1)[:, None, :], x.frac, x.lead)
    prod = yield from bilinear(eng, "matmul", tri.reshape(*tri.shape, 1, 1), pair, rescale=False)
    summed = AShare(prod.v.reshape(*tri.shape[:-1], -1) @ sums, prod.frac, prod.lead)
    return (yield from rescale(eng, summed))


def outer_upper(eng, x: AShare):
    """The upper triangle of x xᵀ (one product)."""
    d = x.shape[0]
    full = yield from bilinear(eng, "matmul", x.reshape(d, 1), x.reshape(1, d))
    return upper(full)
