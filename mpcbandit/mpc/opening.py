"""Opening shares: every party sends its share and sums (or XORs) what it gets (one round).

The leaf of the share layers: binary, fused and arithmetic ops all open through it, and it
knows no op above it. Also the checks every op applies to a peer's ring array, seed or shape.
"""

from __future__ import annotations

import math

import numpy as np

from mpcbandit.bodies import expect_field, kind_of
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc.prg import SEED_BYTES
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.rounds import IN_OP, Round

__all__ = ["open_parts", "open_values", "open_with_bits", "swap_bits", "peer_ring", "peer_seed",
           "peer_shape", "MAX_SHARED_ELEMENTS"]


def _pack(arrays: list[np.ndarray]) -> np.ndarray:
    """One flat wire array for several share arrays (one codec entry instead of many)."""
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate([a.ravel() for a in arrays])


def _unpack(flat, like: list[np.ndarray]) -> list[np.ndarray]:
    flat = np.asarray(flat, dtype=U64)
    if len(like) == 1:
        return [flat.reshape(like[0].shape)]
    out, k = [], 0
    for a in like:
        out.append(flat[k:k + a.size].reshape(a.shape))
        k += a.size
    return out


#: most ring elements a peer may ask a party to expand from a seed (4 GiB of shares)
MAX_SHARED_ELEMENTS = 1 << 29


def peer_ring(body, shape: tuple[int, ...], peer: str) -> np.ndarray:
    """A peer's ring array, reshaped to shape; a ProtocolError naming the peer when it is not
    an array of exactly that many uint64 elements."""
    size = math.prod(shape)
    if type(body) is int and size == 1 and 0 <= body < 1 << 64:  # a ring scalar on the wire
        body = np.array([body], dtype=U64)
    if not isinstance(body, np.ndarray) or body.dtype != U64 or body.size != size:
        got = (f"a {body.dtype} array of {body.size} elements" if isinstance(body, np.ndarray)
               else kind_of(body))
        raise ProtocolError(peer, IN_OP, f"expected {size} ring elements (uint64), got {got}")
    return body.reshape(shape)


def peer_seed(body, peer: str) -> bytes:
    """The 'seed' field of a peer's dict body: exactly SEED_BYTES bytes."""
    seed = expect_field(body, "seed", bytes, peer, IN_OP)
    if len(seed) != SEED_BYTES:
        raise ProtocolError(peer, IN_OP, f"share seed of {len(seed)} bytes, expected {SEED_BYTES}")
    return seed


def peer_shape(body, peer: str) -> tuple[int, ...]:
    """The 'shape' field of a peer's dict body: non-negative ints, at most MAX_SHARED_ELEMENTS."""
    shape = expect_field(body, "shape", list, peer, IN_OP)
    if not all(type(d) is int and d >= 0 for d in shape) or math.prod(shape) > MAX_SHARED_ELEMENTS:
        raise ProtocolError(peer, IN_OP, f"bad share shape {shape[:8]!r}")
    return tuple(shape)


def open_parts(eng, arrays: list[np.ndarray]):
    """Every party's share of each array, in party order (one round)."""
    others = eng.others
    packed = _pack(arrays)
    got = yield Round(dict.fromkeys(others, packed), tuple(others))
    theirs = {p: _unpack(peer_ring(got[p], packed.shape, p), arrays) for p in others}
    return [[arrays[k] if p == eng.me else theirs[p][k] for p in eng.parties]
            for k in range(len(arrays))]


def open_values(eng, arrays: list[np.ndarray], binary: bool = False):
    """The plaintexts of shared arrays (sum mod 2^64, or XOR when binary); one round."""
    others = eng.others
    packed = _pack(arrays)
    got = yield Round(dict.fromkeys(others, packed), tuple(others))
    acc = np.array(packed, dtype=U64, copy=True)
    for p in others:
        # reshape: the codec sends 0-d arrays as shape (1,)
        if binary:
            acc ^= peer_ring(got[p], acc.shape, p)
        else:
            acc += peer_ring(got[p], acc.shape, p)
    return _unpack(acc, arrays)


def _packed_bits(bits: np.ndarray, width: int = 1) -> np.ndarray:
    """A 0/1 array packed 8 to a byte, zero-padded to a multiple of width bytes."""
    packed = np.packbits(bits.ravel().astype(np.uint8))
    out = np.zeros(-(-packed.size // width) * width, dtype=np.uint8)
    out[:packed.size] = packed
    return out


def _unpacked_bits(buf: np.ndarray, like: np.ndarray) -> np.ndarray:
    return np.unpackbits(buf.view(np.uint8), count=like.size).astype(U64).reshape(like.shape)


def open_with_bits(eng, arrays: list[np.ndarray], bits: np.ndarray):
    """2 parties, one round: the plaintexts of shared arrays, and both parties' private 0/1
    arrays of bits' shape (party order), the bits packed into the same message."""
    parts = yield from open_parts(eng, [*arrays, _packed_bits(bits, 8).view(U64)])
    return [p[0] + p[1] for p in parts[:-1]], [_unpacked_bits(w, bits) for w in parts[-1]]


def swap_bits(eng, bits: np.ndarray):
    """Send my 0/1 array to the other of 2 parties as packed bits and get theirs (one round)."""
    (other,) = eng.others
    packed = _packed_bits(bits).tobytes()
    got = yield Round({other: packed}, (other,))
    body = got[other]
    if type(body) is not bytes or len(body) != len(packed):
        raise ProtocolError(other, IN_OP, f"expected {len(packed)} bytes of packed bits, "
                                          f"got {kind_of(body)}")
    return _unpacked_bits(np.frombuffer(body, dtype=np.uint8), bits)
