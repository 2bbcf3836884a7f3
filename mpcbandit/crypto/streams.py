"""Keyed random streams indexed by a counter: row t of an endless table of uniforms.

The table for (seed, purpose) is AES-256-CTR output under key SHA-256(seed | purpose),
generated a chunk of rows at a time, so reading row t costs an index lookup and no party
reseeds anything per step. Every party holding the seed reads the same row t.
"""

from __future__ import annotations

import hashlib
from typing import Callable

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

__all__ = ["derive_seed", "KeyedStream"]


def derive_seed(master: bytes | int, purpose: str) -> bytes:
    """A 32-byte seed for purpose, derived from a master seed (bytes, or a config int)."""
    if isinstance(master, int):
        master = master.to_bytes(16, "little", signed=False)
    return hashlib.sha256(master + b"/" + purpose.encode()).digest()


class KeyedStream:
    """Rows of `width` uniforms in [0, 1) (53-bit), random access by row index t >= 0."""

    def __init__(self, seed: bytes, purpose: str, width: int = 1, chunk: int = 1024,
                 transform: Callable[[np.ndarray], np.ndarray] | None = None):
        self._key = hashlib.sha256(seed + b"|" + purpose.encode()).digest()
        self.width, self.chunk = width, chunk
        self._transform = transform
        self._index = -1
        self._rows: list | np.ndarray = []

    def _block(self, c: int) -> np.ndarray:
        n = self.chunk * self.width
        ctr = (c << 64).to_bytes(16, "big")  # chunks never share a counter block
        raw = Cipher(algorithms.AES(self._key), modes.CTR(ctr)).encryptor().update(bytes(8 * n))
        u = (np.frombuffer(raw, dtype="<u8") >> np.uint64(11)) * (1.0 / 2**53)
        return u.reshape(self.chunk, self.width)

    def _load(self, t: int) -> int:
        c, r = divmod(t, self.chunk)
        if c != self._index:
            block = self._block(c)
            if self._transform is not None:
                self._rows = self._transform(block)
            elif self.width == 1:
                self._rows = block[:, 0].tolist()
            else:
                self._rows = block
            self._index = c
        return r

    def row(self, t: int):
        """Row t (a float when width is 1 and there is no transform)."""
        r = self._load(t)
        return self._rows[r]
