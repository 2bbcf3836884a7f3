"""Fixed-point encoding of reals into Z/2^64 with L fractional bits (Hannun et al. App. B)."""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc.ring import RING_DTYPE

__all__ = ["DEFAULT_FRAC_BITS", "FixedPointRangeError", "encode", "decode", "max_abs"]

#: the paper's precision (App. D: best reward at 20 bits)
DEFAULT_FRAC_BITS = 20


class FixedPointRangeError(ValueError):
    """A value cannot be represented with the requested fractional bits."""


def max_abs(frac: int) -> float:
    """Largest magnitude encodable with frac fractional bits (signed 64-bit, one bit spare)."""
    return float(2 ** (62 - frac))


def encode(x, frac: int = DEFAULT_FRAC_BITS) -> np.ndarray:
    """round(x·2^frac) as ring elements; refuses NaN, inf, |x| ≥ 2^(62-frac) and, with no
    fractional bits, non-integers (shares of integers must not round silently)."""
    x = np.asarray(x, dtype=np.float64)
    bad = ~np.isfinite(x) | (np.abs(x) >= max_abs(frac))
    if bad.any():
        v = float(x[bad].flat[0])
        raise FixedPointRangeError(f"value {v!r} is outside the fixed-point range "
                                   f"|x| < 2^{62 - frac} for {frac} fractional bits")
    scaled = np.rint(x * 2.0 ** frac)
    if frac == 0 and (scaled != x).any():
        v = float(x[scaled != x].flat[0])
        raise FixedPointRangeError(f"value {v!r} is not an integer: with 0 fractional bits it "
                                   "would be rounded")
    return scaled.astype(np.int64).view(RING_DTYPE)


def decode(v: np.ndarray, frac: int = DEFAULT_FRAC_BITS) -> np.ndarray:
    """Ring elements (two's complement) back to float64."""
    return np.asarray(v).view(np.int64).astype(np.float64) / 2.0 ** frac
