"""One party's share of a secret: arithmetic ⟦x⟧ (sum mod 2^64) or binary ⟨x⟩ (XOR of words).

Linear operations are local (0 rounds). ``lead`` marks the one party that adds public
constants, so ``x + 1.5`` means the same thing on every party.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpcbandit.mpc.fixed import encode
from mpcbandit.mpc.ring import RING_DTYPE, to_ring

__all__ = ["AShare", "BShare", "ONES"]

ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True, eq=False)
class AShare:
    """This party's additive share of a fixed-point array with ``frac`` fractional bits."""

    v: np.ndarray
    frac: int
    lead: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self.v.shape

    @property
    def size(self) -> int:
        return self.v.size

    def _like(self, v: np.ndarray, frac: int | None = None) -> "AShare":
        return AShare(v, self.frac if frac is None else frac, self.lead)

    def _public(self, c) -> np.ndarray:
        """A public constant at this share's scale, held by the lead party only."""
        if self.frac == 0 and not np.all(np.mod(np.asarray(c, dtype=np.float64), 1) == 0):
            raise ValueError(f"adding the non-integer {c!r} to an integer share (0 fractional "
                             "bits); shift_frac(L) it first")
        enc = encode(c, self.frac)
        return enc if self.lead else np.zeros_like(enc)

    def _coerce(self, other) -> np.ndarray:
        if isinstance(other, AShare):
            if other.frac != self.frac:
                raise ValueError(f"adding shares with {self.frac} and {other.frac} fractional bits")
            return other.v
        return self._public(other)

    def __add__(self, other) -> "AShare":
        return self._like(self.v + self._coerce(other))

    __radd__ = __add__

    def __sub__(self, other) -> "AShare":
        return self._like(self.v - self._coerce(other))

    def __rsub__(self, other) -> "AShare":
        return self._like(self._coerce(other) - self.v)

    def __neg__(self) -> "AShare":
        return self._like(np.uint64(0) - self.v)

    def __mul__(self, k) -> "AShare":
        """Times a public integer (scalar or array): local. Reals need ``Engine.mul_public``."""
        k = np.asarray(k)
        if k.dtype.kind not in "iub":
            raise TypeError("share * public works for integers only; use eng.mul_public(x, c) "
                            "for reals (it truncates)")
        return self._like(self.v * k.astype(np.int64).view(RING_DTYPE))

    __rmul__ = __mul__

    def __getitem__(self, idx) -> "AShare":
        return self._like(self.v[idx])

    def reshape(self, *shape) -> "AShare":
        return self._like(self.v.reshape(*shape))

    @property
    def T(self) -> "AShare":
        return self._like(self.v.T)

    def sum(self, axis=None) -> "AShare":
        return self._like(self.v.sum(axis=axis, dtype=RING_DTYPE))

    def shift_frac(self, frac: int) -> "AShare":
        """The same value at more fractional bits (local: multiply by 2^(frac - self.frac))."""
        if frac < self.frac:
            raise ValueError("lowering fractional bits needs truncation (eng.truncate)")
        return self._like(self.v << np.uint64(frac - self.frac), frac)

    def to_state(self) -> dict:
        """This share as checkpoint state (its ring elements and scale; lead is the party's)."""
        return {"v": self.v, "frac": self.frac}

    @staticmethod
    def from_state(state: dict, lead: bool) -> "AShare":
        """The share saved by ``to_state``, back on the party that saved it."""
        return AShare(np.asarray(state["v"], dtype=RING_DTYPE), int(state["frac"]), lead)

    @staticmethod
    def concat(shares: list["AShare"], axis: int = 0) -> "AShare":
        """Concatenate shares of equal scale along axis."""
        return shares[0]._like(np.concatenate([s.v for s in shares], axis=axis))

    @staticmethod
    def stack(shares: list["AShare"], axis: int = 0) -> "AShare":
        """Stack shares of equal scale along a new axis."""
        return shares[0]._like(np.stack([s.v for s in shares], axis=axis))


@dataclass(frozen=True, eq=False)
class BShare:
    """This party's XOR share of an array of 64-bit words (bit i of word = bit i of the value)."""

    v: np.ndarray
    lead: bool

    @property
    def shape(self) -> tuple[int, ...]:
        return self.v.shape

    def _coerce(self, other) -> np.ndarray:
        if isinstance(other, BShare):
            return other.v
        other = to_ring(np.asarray(other, dtype=np.uint64))
        return other if self.lead else np.zeros_like(other)

    def __xor__(self, other) -> "BShare":
        return BShare(self.v ^ self._coerce(other), self.lead)

    __rxor__ = __xor__

    def and_public(self, mask) -> "BShare":
        """AND with a public word mask: local on every party."""
        return BShare(self.v & np.asarray(mask, dtype=np.uint64), self.lead)

    def __invert__(self) -> "BShare":
        return self ^ ONES

    def __lshift__(self, s: int) -> "BShare":
        return BShare(self.v << np.uint64(s), self.lead)

    def __rshift__(self, s: int) -> "BShare":
        return BShare(self.v >> np.uint64(s), self.lead)

    def bit(self, i: int) -> "BShare":
        """Bit i of every word, moved to bit 0."""
        return BShare((self.v >> np.uint64(i)) & np.uint64(1), self.lead)

    def __getitem__(self, idx) -> "BShare":
        return BShare(self.v[idx], self.lead)

    def reshape(self, *shape) -> "BShare":
        return BShare(self.v.reshape(*shape), self.lead)
