"""AES-GCM items, Paillier sums, X25519 key transport and keyed streams used by samba."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mpcbandit.crypto import paillier
from mpcbandit.crypto.aead import Aead, AuthenticationError, sealed_size
from mpcbandit.crypto.keyexchange import KeyPair, unwrap_key, wrap_key
from mpcbandit.crypto.streams import KeyedStream, derive_seed


def test_aead_round_trips_and_rejects_tampering_and_wrong_context():
    key = os.urandom(32)
    a, b = Aead(key), Aead(key)
    items = [bytes([i]) * 8 for i in range(5)]
    blob = a.seal_many(items, b"ctx")
    assert len(blob) == 5 * sealed_size(8)
    assert b.open_many(blob, 8, b"ctx") == items
    bad = bytearray(blob)
    bad[3 * sealed_size(8) + 20] ^= 1
    with pytest.raises(AuthenticationError) as err:
        b.open_many(bytes(bad), 8, b"ctx")
    assert err.value.index == 3
    one = a.seal(b"\x01", b"bit/5")
    with pytest.raises(AuthenticationError):
        b.open(one, b"bit/6")
    assert a.seal(b"\x01", b"x") != a.seal(b"\x01", b"x")  # fresh nonces


def test_paillier_product_decrypts_to_the_sum():
    assert paillier.HAVE_GMP
    pk, sk = paillier.keygen(256)
    cs = [paillier.encrypt(pk, m) for m in (3, 0, 17, 1000)]
    assert paillier.decrypt(sk, paillier.add(pk, cs)) == 1020
    with pytest.raises(ValueError):
        paillier.add(pk, [cs[0], pk.nsquare + 5])


def test_key_transport_gives_every_owner_the_same_key_and_rejects_a_swap():
    comp, owners = KeyPair(), [KeyPair() for _ in range(3)]
    key = os.urandom(32)
    wrapped = [wrap_key(key, comp, o.public, b"ctx") for o in owners]
    assert all(unwrap_key(w, o, comp.public, b"ctx") == key for w, o in zip(wrapped, owners))
    assert key not in b"".join(wrapped)
    with pytest.raises(ValueError):
        unwrap_key(wrapped[0], owners[1], comp.public, b"ctx")


def test_keyed_stream_is_random_access_and_purpose_separated():
    seed = derive_seed(7, "x")
    s = KeyedStream(seed, "a", chunk=16)
    forward = [s.row(t) for t in range(50)]
    again = KeyedStream(seed, "a", chunk=16)
    assert [again.row(t) for t in (49, 3, 17)] == [forward[49], forward[3], forward[17]]
    other = KeyedStream(seed, "b", chunk=16)
    assert other.row(3) != forward[3]
    assert all(0.0 <= u < 1.0 for u in forward)
    perms = KeyedStream(seed, "p", width=6, transform=lambda u: np.argsort(u, axis=1))
    assert sorted(perms.row(5).tolist()) == list(range(6))
    big = KeyedStream(seed, "u")
    u = np.array([big.row(t) for t in range(20000)])
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.var() - 1 / 12) < 0.005
