"""Key transport over X25519: Comp hands the data owners the AES key through the Controller.

Each data owner sends an X25519 public key; Comp answers with its own public key and, per
data owner, the AES key sealed under HKDF(X25519(comp, owner)). The relaying Controller sees
public keys and sealed keys only (honest-but-curious model, as in the paper).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = ["KeyPair", "wrap_key", "unwrap_key"]

_RAW = dict(encoding=serialization.Encoding.Raw, format=serialization.PublicFormat.Raw)


class KeyPair:
    """An ephemeral X25519 key pair."""

    def __init__(self) -> None:
        self.private = X25519PrivateKey.generate()
        self.public = self.private.public_key().public_bytes(**_RAW)

    def _kek(self, their_public: bytes, context: bytes) -> AESGCM:
        if not isinstance(their_public, bytes) or len(their_public) != 32:
            raise ValueError("X25519 public key must be 32 bytes")
        shared = self.private.exchange(X25519PublicKey.from_public_bytes(their_public))
        kek = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=context).derive(shared)
        return AESGCM(kek)


def wrap_key(key: bytes, mine: KeyPair, their_public: bytes, context: bytes) -> bytes:
    """key sealed for the holder of their_public (a fixed zero nonce: each KEK seals once)."""
    return mine._kek(their_public, context).encrypt(b"\0" * 12, key, context)


def unwrap_key(sealed: bytes, mine: KeyPair, their_public: bytes, context: bytes) -> bytes:
    """The key sealed by wrap_key; ValueError if it does not authenticate."""
    try:
        return mine._kek(their_public, context).decrypt(b"\0" * 12, sealed, context)
    except InvalidTag:
        raise ValueError("wrapped key does not authenticate") from None
