"""Exp and reciprocal on fixed-point shares (Hannun et al. §3).

exp(x) = (1 + x/2^k)^(2^k), k = 8: one truncation by k bits then k squarings.
Valid inputs: EXP_DOMAIN. The base 1 + x/256 must stay positive and the squarings must not
overflow 2·L fractional bits; the relative error grows like x²/2^(k+1) away from 0.

reciprocal: Newton–Raphson x_{t+1} = x_t(2 − x·x_t) from the paper's x_0 = 3e^{−(x−0.5)} + 0.003,
written in the equivalent error form e_t = 1 − x·x_t, x_{t+1} = x_t + x_t·e_t, e_{t+1} = e_t²
so that each iteration is ONE multiplication depth (the two products share their rounds);
the last iteration is a classical one (fresh e) to wash out accumulated rounding.
Valid inputs: RECIPROCAL_DOMAIN (x·x_0 ∈ (0, 2) there, so it converges; the relative error after
t iterations is |e_0|^(2^t), slowest at the top of the range: see ``reciprocal_error_bound``).
start="linear" replaces the exp by the minimax line x_0 = 24/17 − 8/17·x for x ∈ [1, 2]
(the slope at SLOPE_BITS: |e_0| ≤ 0.0593, so 3 iterations reach 2^-32): 8 rounds fewer, for
callers that know the range. e is truncated after 1 − x·x_t is formed, not x·x_t before: a
probabilistic truncation wraps with probability |value|·2^(2L)/2^64, and e is small.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc import fused
from mpcbandit.mpc.arith import bilinear, square
from mpcbandit.mpc.fixed import encode
from mpcbandit.mpc.rounds import gather
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.truncation import rescale, truncate

__all__ = ["exp", "reciprocal", "mul_public", "EXP_DOMAIN", "RECIPROCAL_DOMAIN",
           "RECIPROCAL_STARTS", "reciprocal_error_bound", "check_domain"]

EXP_DOMAIN = (-64.0, 8.0)
RECIPROCAL_DOMAIN = (0.25, 64.0)
EXP_K = 8
RECIPROCAL_ITERATIONS = 7
#: the Newton start: the paper's exp (any x in RECIPROCAL_DOMAIN), or the line for x in [1, 2]
RECIPROCAL_STARTS = ("exp", "linear")
#: fractional bits of the linear start's slope 8/17 (482/1024, |1 − d·x₀| ≤ 0.0593 on [1, 2]):
#: x·slope is then truncated from L + 10 bits, not 2L, so it wraps 2^(L−10) times less often
SLOPE_BITS = 10
#: the line x_0 = LINE_AT_0 − LINE_SLOPE·x
LINE_AT_0, LINE_SLOPE = 24 / 17, 8 / 17


def check_domain(name: str, domain, valid) -> None:
    """Refuse a declared input range that leaves the op's valid range."""
    lo, hi = domain
    if not (valid[0] <= lo <= hi <= valid[1]):
        raise ValueError(f"{name}: declared input range [{lo:g}, {hi:g}] is outside the valid "
                         f"range [{valid[0]:g}, {valid[1]:g}]")


def _exp_plain(x: np.ndarray, k: int = EXP_K) -> np.ndarray:
    return (1 + x / 2 ** k) ** (2 ** k)


def reciprocal_error_bound(domain, iterations: int = RECIPROCAL_ITERATIONS) -> float:
    """Worst relative error of the iteration over domain, ignoring fixed-point rounding."""
    x = np.linspace(domain[0], domain[1], 4097)
    x0 = 3 * _exp_plain(0.5 - x) + 0.003
    return float(np.max(np.abs(1 - x * x0) ** (2 ** iterations)))


def _exp_pending(eng, x: AShare, k: int):
    """(1 + x/2^k)^(2^k) with every truncation fused into the next squaring: k rounds, the
    result still pending (its last truncation not yet opened)."""
    u = fused.pend(eng, AShare(x.v, x.frac + k, x.lead), k) + 1.0        # 1 + x/2^k
    for _ in range(k):
        (w,), _ = yield from fused.fused_products(eng, [("square", u, None)])
        u = fused.pend(eng, w, w.frac - eng.frac)
    return u


def _reciprocal_pair(eng, x: AShare, iterations: int, start: str):
    """The reciprocal's chain with fused truncations: T + 11 rounds for any n (T + 3 from the
    linear start)."""
    if start == "exp":
        x_t = (yield from _exp_pending(eng, 0.5 - x, EXP_K)) * 3 + 0.003
    else:
        x_t = LINE_AT_0 - fused.pend(eng, _times_public(eng, x, LINE_SLOPE, SLOPE_BITS), SLOPE_BITS)
    (w,), done = yield from fused.fused_products(eng, [("mul", x, x_t)])
    x_t = done[id(x_t)]
    err = fused.pend(eng, 1.0 - w, w.frac - eng.frac)   # truncate the small error: see _error
    for _ in range(iterations - 1):
        (step, sq), done = yield from fused.fused_products(eng, [("mul", x_t, err), ("square", err, None)])
        x_t = fused.pend(eng, step, step.frac - eng.frac) + (done.get(id(x_t)) or x_t)
        err = fused.pend(eng, sq, sq.frac - eng.frac)
    (w,), done = yield from fused.fused_products(eng, [("mul", x, x_t)])   # fresh error
    x_t = done.get(id(x_t)) or x_t
    err = fused.pend(eng, 1.0 - w, w.frac - eng.frac)
    (step,), done = yield from fused.fused_products(eng, [("mul", x_t, err)])
    return (yield from fused.settle(eng, fused.pend(eng, step, step.frac - eng.frac) + x_t))


def exp(eng, x: AShare, k: int = EXP_K):
    """⟦e^x⟧ ≈ (1 + x/2^k)^(2^k): truncation by k bits, then k squarings."""
    x = x.shift_frac(eng.frac) if x.frac < eng.frac else x
    if eng.trunc == "pair":
        return (yield from fused.settle(eng, (yield from _exp_pending(eng, x, k))))
    small = yield from truncate(eng, AShare(x.v, x.frac + k, x.lead), k)   # x / 2^k
    u = small + 1.0
    for _ in range(k):
        u = yield from square(eng, u)
    return u


def _times_public(eng, x: AShare, c, bits: int | None = None) -> AShare:
    """x·c for a public c encoded at `bits` (default the engine's): local, not yet truncated."""
    bits = eng.frac if bits is None else bits
    return AShare(x.v * encode(c, bits), x.frac + bits, x.lead)


def mul_public(eng, x: AShare, c, bits: int | None = None):
    """⟦x·c⟧ for a public c (scalar or array): a local product, then one truncation. c is
    encoded at `bits` fractional bits (default the engine's): fewer bits of c, a smaller value
    to truncate and so fewer wraps of a probabilistic truncation."""
    return (yield from rescale(eng, _times_public(eng, x, c, bits)))


def reciprocal(eng, x: AShare, iterations: int = RECIPROCAL_ITERATIONS, start: str = "exp"):
    """⟦1/x⟧ by Newton–Raphson from the paper's initial value (start="exp") or, for x in
    [1, 2], the minimax line (start="linear"). x may be an untruncated product (more than the
    engine's fractional bits): it is truncated first, with exact truncation in the same round
    as the line's product.

    Iterations 1..T−1 run in error form (one multiplication depth each); before the last one
    e is recomputed from x so that the rounding carried along the error form is corrected
    (the classical step is self-correcting). Depth: T + 2 products after the start."""
    if start not in RECIPROCAL_STARTS:
        raise ValueError(f"unknown reciprocal start {start!r} (choose from "
                         f"{', '.join(RECIPROCAL_STARTS)})")
    x, x_t = yield from _narrowed(eng, x, start)
    if eng.trunc == "pair":
        return (yield from _reciprocal_pair(eng, x, iterations, start))
    if x_t is None and start == "exp":
        x_t = (yield from exp(eng, 0.5 - x)) * 3 + 0.003
    elif x_t is None:
        x_t = LINE_AT_0 - (yield from mul_public(eng, x, LINE_SLOPE, SLOPE_BITS))
    err = yield from _error(eng, x, x_t)
    for _ in range(iterations - 1):
        step, err = yield from gather([bilinear(eng, "mul", x_t, err), square(eng, err)])
        x_t = x_t + step
    err = yield from _error(eng, x, x_t)   # fresh error: classical last step
    return x_t + (yield from bilinear(eng, "mul", x_t, err))


def _narrowed(eng, x: AShare, start: str):
    """x at the engine's fractional bits, and the linear start if it came for free: from an
    untruncated product, exact truncation takes x·slope down in the same round as x (it cannot
    wrap, even from 2L + SLOPE_BITS bits)."""
    if x.frac < eng.frac:
        return x.shift_frac(eng.frac), None
    if x.frac > eng.frac and start == "linear" and eng.trunc == "exact":
        x, slope = yield from gather([rescale(eng, x), truncate(
            eng, _times_public(eng, x, LINE_SLOPE, SLOPE_BITS), x.frac + SLOPE_BITS - eng.frac)])
        return x, LINE_AT_0 - slope
    return (yield from rescale(eng, x)), None


def _error(eng, x: AShare, x_t: AShare):
    """⟦1 − x·x_t⟧, truncated after the subtraction: a probabilistic truncation wraps with
    probability |value|·2^(2L)/2^64, and the error is small where x·x_t is near 1."""
    w = yield from bilinear(eng, "mul", x, x_t, rescale=False)
    return (yield from rescale(eng, 1.0 - w))
