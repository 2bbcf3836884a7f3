"""Cryptographic PRG: AES-256 in counter mode, expanded into ring elements or bytes.

Everything a party must not be able to predict (shares, masks, dealer material) comes from
here, never from numpy's generators.
"""

from __future__ import annotations

import os

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["Prg", "SEED_BYTES"]

SEED_BYTES = 32


class Prg:
    """AES-256-CTR keystream from a 32-byte seed; fresh random seed when none is given."""

    def __init__(self, seed: bytes | None = None):
        self.seed = os.urandom(SEED_BYTES) if seed is None else bytes(seed)
        if len(self.seed) != SEED_BYTES:
            raise ValueError(f"PRG seed must be {SEED_BYTES} bytes, got {len(self.seed)}")
        self._enc = Cipher(algorithms.AES(self.seed), modes.CTR(b"\0" * 16)).encryptor()
        self.position = 0  # bytes drawn so far

    @classmethod
    def at(cls, seed: bytes, position: int) -> "Prg":
        """The stream of seed continued from byte `position` (resuming from a checkpoint)."""
        prg = cls(seed)
        block, skip = divmod(int(position), 16)
        # CTR's 128-bit big-endian counter: start at the block holding `position`
        ctr = modes.CTR(block.to_bytes(16, "big"))
        prg._enc = Cipher(algorithms.AES(prg.seed), ctr).encryptor()
        prg._enc.update(b"\0" * skip)
        prg.position = int(position)
        return prg

    def bytes(self, n: int) -> bytes:
        """The next n keystream bytes."""
        self.position += n
        return self._enc.update(_zeros(n))

    def ring(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Uniform elements of Z/2^64 as a uint64 array."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = 8 * int(np.prod(shape, dtype=np.int64))
        # the keystream written straight into the array's memory: no zeros, no bytes object
        # and no copy of it made per call (the dealer's material is megabytes a second)
        out = np.empty(n + _BLOCK - 1, dtype=np.uint8)
        self.position += n
        self._enc.update_into(_zeros(n), out)
        return out[:n].view("<u8").reshape(shape)


_BLOCK = 16   # AES's block: update_into wants that much room beyond the data, less one
_ZEROS = bytes(1 << 16)


def _zeros(n: int) -> memoryview:
    """n zero bytes to encrypt (CTR's keystream is the encryption of zeros), without
    allocating them at every call."""
    global _ZEROS
    if len(_ZEROS) < n:
        _ZEROS = bytes(max(n, 2 * len(_ZEROS)))
    return memoryview(_ZEROS)[:n]
