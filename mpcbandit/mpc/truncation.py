"""Truncation of fixed-point shares by 2^d: local (SecureML), the paper's Alg. 3, exact
(the shares' wrap count from their top bits in one round for 2 parties; for more, Alg. 3 with
η from a comparison circuit) and pair (stochastic rounding, fused)."""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc.binary import less_than_public
from mpcbandit.mpc.fused import pend, settle
from mpcbandit.mpc.opening import open_parts, swap_bits
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.ring import wraps_signed, wraps_unsigned
from mpcbandit.mpc.shares import AShare

__all__ = ["truncate", "rescale", "exact_parts", "TRUNC_MODES"]

TRUNC_MODES = ("local", "paper", "exact", "pair")


def _target_frac(eng, frac: int) -> int:
    return frac if frac <= eng.frac else eng.frac


def rescale(eng, x: AShare):
    """Truncate x down to the engine's fractional bits if a product left it above."""
    target = _target_frac(eng, x.frac)
    if target == x.frac:
        return x
    return (yield from truncate(eng, x, x.frac - target))


def truncate(eng, x: AShare, d: int, mode: str | None = None):
    """⟦x / 2^d⟧ with the engine's truncation (local | paper | exact); frac drops by d."""
    mode = mode or eng.trunc
    if d == 0:
        return x
    if mode == "pair":  # stochastic rounding: unbiased as it is
        return (yield from settle(eng, pend(eng, x, d)))
    up = np.uint64(64 - d)
    if mode == "exact" and eng.n == 2:
        # the shares wrap when either top bit is set: t0 + t1 − t0·t1, the product one round
        h, top = exact_parts(eng, x, d)
        wraps = top - (yield from _private_bit_product(eng, top))
        return AShare(h - (wraps << up), x.frac - d, eng.lead)
    x = AShare(_rounding(eng, x.v, d), x.frac, x.lead)
    if mode == "local":
        if eng.n != 2:
            raise ValueError(f"local truncation is for 2 computing parties, not {eng.n}")
        v = (x.v.view(np.int64) >> np.int64(d)).view(U64)  # SecureML: each share shifts itself
        return AShare(v, x.frac - d, eng.lead)
    if mode == "paper":
        # Alg. 3 (Hannun et al. App. C), η skipped as in the paper
        m = eng.material.take("trunc", (), x.size)
        r, theta_r = m["r"].reshape(x.shape), m["theta"].reshape(x.shape)
        z_mine = x.v + r
        beta = wraps_signed([x.v, r]).view(U64)
        (parts,) = yield from open_parts(eng, [z_mine])
        theta = beta - theta_r
        if eng.lead:
            theta += wraps_signed(parts).view(U64)
        v = (x.v.view(np.int64) >> np.int64(d)).view(U64) - (theta << up)
        return AShare(v, x.frac - d, eng.lead)
    if mode == "exact":
        # unsigned frame: offset by 2^62, x lies in [0, 2^63); the wrap count of its shares
        # from Alg. 3 with η by a comparison circuit
        xp = _offset(eng, x.v)
        return AShare(_shifted(eng, xp, d) - ((yield from _alg3_wraps(eng, xp)) << up),
                      x.frac - d, eng.lead)
    raise ValueError(f"unknown truncation {mode!r} (choose from {', '.join(TRUNC_MODES)})")


def _rounding(eng, v: np.ndarray, d: int) -> np.ndarray:
    """Each of the n shares is floored, losing (n−1)/2 units on average; the lead adds n/2
    units first so that the result is unbiased."""
    return v + np.uint64(eng.n << (d - 1)) if eng.lead else v


def _offset(eng, v: np.ndarray) -> np.ndarray:
    """The exact frame: x + 2^62 (the lead adds it), in [0, 2^63) for |x| < 2^62."""
    return v + np.uint64(1 << 62) if eng.lead else v


def _shifted(eng, xp: np.ndarray, d: int) -> np.ndarray:
    """This party's share shifted down by d, the offset removed: ⌊x/2^d⌋ plus the wraps'
    2^(64−d) multiples."""
    v = xp >> np.uint64(d)
    return v - np.uint64(1 << (62 - d)) if eng.lead else v


def exact_parts(eng, x: AShare, d: int) -> tuple[np.ndarray, np.ndarray]:
    """2 parties, local: (h, t) with ⌊x/2^d⌋ = ⟦h⟧ − 2^(64−d)·(t_0 + t_1 − t_0·t_1), h this
    party's share and t the top bit of its share in the exact frame: x + 2^62 lies in [0, 2^63),
    so its two shares wrap past 2^64 exactly when either top bit is set (the bits' OR is the
    one round ``truncate`` spends; ``truncated_product`` spends it on a product instead)."""
    xp = _offset(eng, _rounding(eng, x.v, d))
    return _shifted(eng, xp, d), xp >> np.uint64(63)


def _alg3_wraps(eng, xp: np.ndarray):
    """This party's share of how often the shares of xp wrap 2^64: Alg. 3's θ with η = [z < r]
    from a comparison circuit (7 rounds, any number of parties)."""
    m = eng.material.take("trunc_exact", (), xp.size)
    r, theta_r, rb = (m[k].reshape(xp.shape) for k in ("r", "theta", "rb"))
    beta = wraps_unsigned([xp, r]).view(U64)
    (parts,) = yield from open_parts(eng, [xp + r])
    z = parts[0].copy()
    for p in parts[1:]:
        z += p
    eta = yield from less_than_public(eng, z, rb)
    theta = beta - theta_r - eta.v
    if eng.lead:
        theta += wraps_unsigned(parts).view(U64)
    return theta


def _private_bit_product(eng, t: np.ndarray):
    """Shares of t0·t1, party i holding the bits t_i (one round, one bit each way): party 0
    sends e = t0 ⊕ a0, party 1 sends f = t1 ⊕ b1, masks only each holds, with [a0·b1] from
    the dealer; t0·t1 = t0·f + (1 − 2f)·(e·b1 + (1 − 2e)·a0·b1)."""
    m = eng.material.take("bitprod", (), t.size)
    mask = (m["a"] if eng.lead else m["b"]).reshape(t.shape)
    c = m["c"].reshape(t.shape)
    mine = t ^ mask
    theirs = yield from swap_bits(eng, mine)
    e, f = (mine, theirs) if eng.lead else (theirs, mine)
    one, two = np.uint64(1), np.uint64(2)
    if eng.lead:
        return t * f + (one - two * f) * (one - two * e) * c
    return (one - two * f) * (e * mask + (one - two * e) * c)
