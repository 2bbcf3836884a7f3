"""Z/2^64 on uint64 arrays: wraparound arithmetic, additive sharing, reconstruction."""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc.prg import Prg

__all__ = ["RING_DTYPE", "to_ring", "share", "reconstruct"]

RING_DTYPE = np.dtype("<u8")


def to_ring(x: np.ndarray) -> np.ndarray:
    """View an int64/uint64 array as ring elements (two's complement, no copy when possible)."""
    x = np.asarray(x)
    if x.dtype == RING_DTYPE:
        return x
    if x.dtype.kind not in "iu" or x.dtype.itemsize != 8:
        raise TypeError(f"ring values must be 64-bit integers, got {x.dtype}")
    return x.view(RING_DTYPE)


def share(x: np.ndarray, n: int, prg: Prg) -> list[np.ndarray]:
    """n additive shares of x: n-1 uniform ones and a last one that makes the sum x."""
    if n < 2:
        raise ValueError(f"sharing needs at least 2 parties, got {n}")
    x = to_ring(x)
    shares = [prg.ring(x.shape) for _ in range(n - 1)]
    last = x.copy()
    for s in shares:
        last -= s
    return [*shares, last]


def reconstruct(shares: list[np.ndarray]) -> np.ndarray:
    """The sum of shares modulo 2^64."""
    out = to_ring(shares[0]).copy()
    for s in shares[1:]:
        out += to_ring(s)
    return out


_LO = np.uint64(0xFFFFFFFF)


def wraps_signed(parts: list[np.ndarray]) -> np.ndarray:
    """θ with Σ parts = value + θ·2^64, parts and value read as signed int64 (exact, vectorised)."""
    hi = sum(to_ring(p).view(np.int64) >> 32 for p in parts)
    lo = sum((to_ring(p) & _LO).astype(np.int64) for p in parts)
    hi = hi + (lo >> 32)
    return (hi + (1 << 31)) >> 32


def wraps_unsigned(parts: list[np.ndarray]) -> np.ndarray:
    """θ with Σ parts = value + θ·2^64, parts and value read as unsigned (exact, vectorised)."""
    hi = sum((to_ring(p) >> np.uint64(32)).astype(np.int64) for p in parts)
    lo = sum((to_ring(p) & _LO).astype(np.int64) for p in parts)
    return (hi + (lo >> 32)) >> 32
