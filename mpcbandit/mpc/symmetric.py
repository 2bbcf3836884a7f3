"""Shared symmetric matrices kept by their upper triangles.

A matrix updated by symmetric terms (W^{-1} under Sherman–Morrison) drifts from symmetry when
each entry is truncated on its own. Keeping only the upper triangle E = D(D+1)/2 and mirroring
it share by share (``mirror``) keeps the shared value exactly symmetric; ``matvec`` multiplies
such a matrix by a vector opening the triangle only (E + D ring elements instead of D² + D),
and ``outer_upper`` gives the triangle of x xᵀ.
"""

from __future__ import annotations

from mpcbandit.mpc import truncation
from mpcbandit.mpc.arith import bilinear, scaled_outer_upper
from mpcbandit.mpc.rounds import gather
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.triangle import mirror_index, triangle

__all__ = ["upper", "mirror", "matvec", "outer_upper", "scaled_outer"]


def upper(m: AShare) -> AShare:
    """The upper triangles (..., E) of shared D x D matrices (..., D, D)."""
    rows, cols = triangle(m.shape[-1])
    return m[..., rows, cols]


def mirror(tri: AShare, d: int) -> AShare:
    """The D x D matrices whose upper triangles (..., E) are given, mirrored share by share."""
    return tri[..., mirror_index(d)]


def matvec(eng, m: AShare, x: AShare, rescale: bool = True):
    """m x for exactly symmetric shared m (..., D, D) and x (D,), or every matrix times every
    row of a batch x (B, D), giving (B, ..., D): one product that masks and opens the triangle
    of m and x only (m once for the whole batch), truncated once per entry of the result
    (rescale)."""
    if x.v.ndim == 2:   # rows apart from m's axes: never paired row by row with the matrices
        x = x.reshape(x.shape[0], *([1] * (m.v.ndim - 2)), x.shape[1])
    elif x.v.ndim != 1:
        raise ValueError(f"matvec: x of shape {x.shape}: give a vector (D,) or a batch (B, D)")
    return (yield from bilinear(eng, "symmatvec", upper(m), x, rescale=rescale))


def outer_upper(eng, x: AShare):
    """The upper triangle of x xᵀ (one product)."""
    return (yield from bilinear(eng, "outer_upper", x, x))


def scaled_outer(eng, q_chain, u: AShare):
    """The triangles (..., E) of q u uᵀ at the engine's bits, for |q u uᵀ| <= 1, q (...,) the
    result of the op chain q_chain (run meanwhile) and u (..., D) untruncated. With exact
    truncation and 3L <= 62 bits, one product opens q and u, then one truncation (a single
    rounding); else u uᵀ is formed while q_chain runs, then q times it."""
    if eng.trunc == "exact" and 3 * eng.frac <= 62:   # q u uᵀ at 3L bits: in exact's range
        q, u = yield from gather([q_chain, truncation.rescale(eng, u)])
        return (yield from truncation.rescale(eng, (yield from scaled_outer_upper(
            eng, q.reshape(*q.shape, 1), u))))
    q, uu = yield from gather([q_chain, _outer_of_truncated(eng, u)])
    term = yield from bilinear(eng, "matmul", q.reshape(*q.shape, 1, 1),
                               uu.reshape(*uu.shape[:-1], 1, uu.shape[-1]))
    return term.reshape(*uu.shape)


def _outer_of_truncated(eng, u: AShare):
    u = yield from truncation.rescale(eng, u)
    return (yield from outer_upper(eng, u))
