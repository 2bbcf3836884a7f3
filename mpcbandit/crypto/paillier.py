"""Paillier (``E``/``D`` of SAMBA) over phe, with ciphertexts as plain ints for the wire.

phe uses gmpy2 when it is installed (``phe.util.HAVE_GMP``); the public key travels as its
modulus n (g = n + 1 in phe).
"""

from __future__ import annotations

from phe import paillier
from phe.util import HAVE_GMP

__all__ = ["HAVE_GMP", "keygen", "public_key", "encrypt", "add", "decrypt", "check_ciphertext"]


def keygen(bits: int = 2048) -> tuple[paillier.PaillierPublicKey, paillier.PaillierPrivateKey]:
    """A fresh Paillier key pair with an n of the given bit length."""
    return paillier.generate_paillier_keypair(n_length=bits)


def public_key(n: int) -> paillier.PaillierPublicKey:
    """The public key with modulus n."""
    return paillier.PaillierPublicKey(n)


def check_ciphertext(pk: paillier.PaillierPublicKey, c: object) -> int:
    """c if it is an int in [1, n^2), else ValueError."""
    if not isinstance(c, int) or isinstance(c, bool) or not 0 < c < pk.nsquare:
        raise ValueError("not a Paillier ciphertext under this public key")
    return c


def encrypt(pk: paillier.PaillierPublicKey, m: int) -> int:
    """E(m) with fresh randomness, as an int modulo n^2."""
    return pk.raw_encrypt(int(m))


def add(pk: paillier.PaillierPublicKey, ciphertexts: list[int]) -> int:
    """E(sum m_i) from the E(m_i): their product modulo n^2 (additive homomorphism)."""
    out = 1
    for c in ciphertexts:
        out = out * check_ciphertext(pk, c) % pk.nsquare
    return out


def decrypt(sk: paillier.PaillierPrivateKey, c: int) -> int:
    """D(c)."""
    return sk.raw_decrypt(check_ciphertext(sk.public_key, c))
