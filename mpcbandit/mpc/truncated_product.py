"""A product with one factor's exact truncation in the product's own round (2 parties).

x·⌊y/2^d⌋ where y sits in the exact frame (``truncation.exact_parts``): ⌊y/2^d⌋ = ⟦h⟧ −
2^(64−d)·w, w = t_0 + t_1 − t_0·t_1 the wrap of y's shares and t_i the top bit party i alone
holds. Truncating first spends a round on w and a second on the product. Here each party
opens x − a and h − b as in a Beaver product and, in the same message, sends its bit masked by
a bit only it holds (f_0 = t_0 ⊕ α, f_1 = t_1 ⊕ β, packed). With s_i = 1 − 2f_i,
t_0 = f_0 + α·s_0 and t_1 = f_1 + β·s_1, so

    w = F + α·s_0(1 − f_1) + β·s_1(1 − f_0) − α·β·s_0·s_1,   F = f_0 + f_1 − f_0·f_1,

and x·w = (e + a)·w, e = x − a, is linear in α (party 0's), β (party 1's) and the dealer's
shares of a·α, a·β, α·β and a·α·β. Only x·w mod 2^d matters (2^(64−d) removes the rest), so
those come mod 2^32 (d <= 32). The result equals x times ``truncate``'s exact result element
for element, at x.frac + y.frac − d bits.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc import truncation
from mpcbandit.mpc.arith import bilinear
from mpcbandit.mpc.opening import open_with_bits
from mpcbandit.mpc.shares import AShare

__all__ = ["mul_truncated", "fuses"]


def fuses(eng, d: int) -> bool:
    """Whether ``mul_truncated`` takes the truncation by d into the product's round."""
    return eng.trunc == "exact" and eng.n == 2 and 0 < d <= 32


def mul_truncated(eng, x: AShare, y: AShare, d: int):
    """⟦x·⌊y/2^d⌋⟧ elementwise (x broadcast into y's shape), not rescaled: one round with
    exact truncation, 2 parties and d <= 32; otherwise the engine's truncation, then the
    product."""
    if np.broadcast_shapes(x.shape, y.shape) != y.shape:
        raise ValueError(f"mul_truncated: x of shape {x.shape} does not broadcast into y's "
                         f"{y.shape}")
    if not fuses(eng, d):
        return (yield from bilinear(eng, "mul", x, (yield from truncation.truncate(eng, y, d)),
                                    rescale=False))
    h, top = truncation.exact_parts(eng, y, d)
    m = eng.material.take("multrunc", (x.shape, y.shape), 1)
    a, b, c, a_al, a_be, al_be, a_al_be = (
        m[k][0] for k in ("a", "b", "c", "a_al", "a_be", "al_be", "a_al_be"))
    mask = (m["al"] if eng.lead else m["be"])[0]   # the bit α on party 0, β on party 1
    (e, g), (f0, f1) = yield from open_with_bits(eng, [x.v - a, h - b], top ^ mask)
    one, two = np.uint64(1), np.uint64(2)
    s0, s1 = one - two * f0, one - two * f1
    big_f, k0, k1 = f0 + f1 - f0 * f1, s0 * (one - f1), s1 * (one - f0)
    z = c + e * b + a * g                                            # x·h, Beaver
    wrap = a * big_f + a_al * k0 + a_be * k1 - (a_al_be + e * al_be) * (s0 * s1)   # x·w
    if eng.lead:
        z += e * g
        wrap += e * (big_f + mask * k0)
    else:
        wrap += e * mask * k1
    z -= wrap << np.uint64(64 - d)
    return AShare(z, x.frac + y.frac - d, eng.lead)
