"""AES-256-GCM for fixed-size items (SAMBA's ``Enc``/``Dec``).

A sealed item is ``nonce (12) | ciphertext | tag (16)``. Nonces are random (from a private
AES-CTR PRG seeded by os.urandom), not counters: a counter or a sender prefix in the nonce
would tell Comp which data owner produced a permuted score. 2^32 random nonces per key keep
the collision probability below NIST's bound; SAMBA at N = 10^5, K = 100 uses ~2 * 10^7.
The associated data binds each item to its step and purpose, so a replayed or moved item
fails authentication like a tampered one.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from mpcbandit.mpc.prg import Prg

__all__ = ["Aead", "AuthenticationError", "KEY_BYTES", "NONCE_BYTES", "TAG_BYTES", "sealed_size"]

KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
_NONCE_BATCH = 4096


def sealed_size(plaintext_bytes: int) -> int:
    """Bytes of one sealed item of plaintext_bytes."""
    return NONCE_BYTES + plaintext_bytes + TAG_BYTES


class AuthenticationError(Exception):
    """An AES-GCM item failed authentication (tampered, replayed, or wrong key)."""

    def __init__(self, index: int):
        self.index = index
        super().__init__(f"AES-GCM authentication failed for item {index}")


class Aead:
    """AES-256-GCM under one shared key, sealing and opening lists of fixed-size items."""

    def __init__(self, key: bytes):
        if len(key) != KEY_BYTES:
            raise ValueError(f"AES-256-GCM key must be {KEY_BYTES} bytes, got {len(key)}")
        self._gcm = AESGCM(key)
        self._nonces = Prg(os.urandom(32))
        self._pool = b""
        self._pos = 0

    def _nonce(self) -> bytes:
        if self._pos + NONCE_BYTES > len(self._pool):
            self._pool, self._pos = self._nonces.bytes(NONCE_BYTES * _NONCE_BATCH), 0
        n = self._pool[self._pos:self._pos + NONCE_BYTES]
        self._pos += NONCE_BYTES
        return n

    def seal(self, plaintext: bytes, aad: bytes) -> bytes:
        """nonce | AES-GCM(plaintext, aad) | tag."""
        nonce = self._nonce()
        return nonce + self._gcm.encrypt(nonce, plaintext, aad)

    def open(self, item: bytes, aad: bytes, index: int = 0) -> bytes:
        """The plaintext of one sealed item; AuthenticationError(index) if it does not verify."""
        try:
            return self._gcm.decrypt(item[:NONCE_BYTES], item[NONCE_BYTES:], aad)
        except (InvalidTag, ValueError):
            raise AuthenticationError(index) from None

    def seal_many(self, plaintexts: list[bytes], aad: bytes) -> bytes:
        """The concatenation of one sealed item per plaintext (all under the same aad)."""
        enc, nonce = self._gcm.encrypt, self._nonce
        out = []
        for p in plaintexts:
            n = nonce()
            out.append(n)
            out.append(enc(n, p, aad))
        return b"".join(out)

    def open_many(self, blob: bytes, plaintext_bytes: int, aad: bytes) -> list[bytes]:
        """Split blob into sealed items of plaintext_bytes each and open them all."""
        size = sealed_size(plaintext_bytes)
        if len(blob) % size:
            raise AuthenticationError(len(blob) // size)
        dec = self._gcm.decrypt
        out = []
        for j in range(0, len(blob), size):
            try:
                out.append(dec(blob[j:j + NONCE_BYTES], blob[j + NONCE_BYTES:j + size], aad))
            except InvalidTag:
                raise AuthenticationError(j // size) from None
        return out
