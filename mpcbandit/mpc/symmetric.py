"""Shared symmetric matrices kept by their upper triangles.

A matrix updated by symmetric terms (W^{-1} under Sherman–Morrison) drifts from symmetry when
each entry is truncated on its own. Keeping only the upper triangle E = D(D+1)/2 and mirroring
it share by share (``mirror``) keeps the shared value exactly symmetric; ``matvec`` multiplies
such a matrix by a vector opening the triangle only (E + D ring elements instead of D² + D),
and ``outer_upper`` gives the triangle of x xᵀ.
"""

from __future__ import annotations

from mpcbandit.mpc.arith import bilinear
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.triangle import mirror_index, triangle

__all__ = ["upper", "mirror", "matvec", "outer_upper"]


def upper(m: AShare) -> AShare:
    """The upper triangles (..., E) of shared D x D matrices (..., D, D)."""
    rows, cols = triangle(m.shape[-1])
    return m[..., rows, cols]


def mirror(tri: AShare, d: int) -> AShare:
    """The D x D matrices whose upper triangles (..., E) are given, mirrored share by share."""
    return tri[..., mirror_index(d)]


def matvec(eng, m: AShare, x: AShare):
    """m x for exactly symmetric shared m (..., D, D) and x (D,): one product that masks and
    opens the triangle of m and x only, truncated once per entry of the result."""
    return (yield from bilinear(eng, "symmatvec", upper(m), x))


def outer_upper(eng, x: AShare):
    """The upper triangle of x xᵀ (one product)."""
    return (yield from bilinear(eng, "outer_upper", x, x))
