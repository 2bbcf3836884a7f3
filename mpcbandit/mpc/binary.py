"""Binary (XOR) shares on packed 64-bit words: AND, the parallel-prefix carry circuit, MSB,
A2B, B2A and comparison with a public value (Hannun et al. App. A.1–A.2).

Round counts (any number of parties): AND 1; MSB 7 (open x − r, 5 prefix levels, and the
last level fused with B2A through a one-time truth table); A2B 7; B2A 1.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from mpcbandit.mpc.arith import open_values
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.shares import AShare, BShare

__all__ = ["and_", "truth_table", "b2a", "msb", "a2b", "less_than_public"]

ONE = np.uint64(1)
#: shifts of the Kogge–Stone levels that make every group 32 bits wide
HALF_LEVELS = (1, 2, 4, 8, 16)


def and_(eng, xs: list[BShare], ys: list[BShare]):
    """Pairwise ANDs xs[k] & ys[k] with binary Beaver triples; one round for all of them."""
    shapes = [x.v.shape for x in xs]
    X = np.concatenate([x.v.ravel() for x in xs])
    Y = np.concatenate([np.broadcast_to(y.v, x.v.shape).ravel() for x, y in zip(xs, ys)])
    m = eng.material.take("and", (), X.size)
    a, b, c = m["a"], m["b"], m["c"]
    e, d = yield from open_values(eng, [X ^ a, Y ^ b], binary=True)
    z = c ^ (e & b) ^ (d & a)
    if eng.lead:
        z ^= e & d
    out, k = [], 0
    for s in shapes:
        size = int(np.prod(s, dtype=np.int64))
        out.append(BShare(z[k:k + size].reshape(s), eng.lead))
        k += size
    return out


def truth_table(eng, bits: list[BShare], fn: Callable[..., np.ndarray]):
    """Arithmetic ⟦fn(bits)⟧ (0/1 integers) of k shared bits in ONE round: open the bits
    masked by the dealer's random bits w and combine its shared one-hot of w with the public
    table of fn (one-time truth table)."""
    k = len(bits)
    shape = bits[0].v.shape
    size = int(np.prod(shape, dtype=np.int64))
    m = eng.material.take("tt", (k,), size)
    w, h = m["w"], m["h"]
    masked = yield from open_values(eng, [(b.v.ravel() & ONE) ^ w[:, j] for j, b in enumerate(bits)],
                                    binary=True)
    out = np.zeros(size, dtype=U64)
    for idx in range(2 ** k):
        args = [masked[j] ^ np.uint64((idx >> j) & 1) for j in range(k)]
        out += h[:, idx] * (fn(*args) & ONE)
    return AShare(out.reshape(shape), 0, eng.lead)


def b2a(eng, bit: BShare):
    """Arithmetic share (0 fractional bits) of the bit-0 of a binary share; one round."""
    return (yield from truth_table(eng, [bit], lambda t: t))


def _prefix(eng, G: BShare, P: BShare, shifts=HALF_LEVELS):
    """Kogge–Stone levels: after shift s, position i covers bits i−2s+1..i; one round each."""
    for s in shifts:
        if s == shifts[-1] and shifts is not HALF_LEVELS:
            (pg,) = yield from and_(eng, [P], [G << s])
            G = G ^ pg
        else:
            pg, pp = yield from and_(eng, [P, P], [G << s, P << s])
            G, P = G ^ pg, pp
    return G, P


def _xor_and(t, u, v):
    return t ^ (u & v)


def msb(eng, x: AShare):
    """⟦x < 0⟧ (0/1, 0 fractional bits): x = z + r with z = x − r opened and r given to the
    parties in binary by the dealer; MSB(z + r) via the carry into bit 63. 7 rounds."""
    shape = x.v.shape
    m = eng.material.take("edabit", (), x.size)
    r, rb = m["r"].reshape(shape), BShare(m["rb"].reshape(shape), eng.lead)
    (z,) = yield from open_values(eng, [x.v - r])
    G, P = rb.and_public(z), rb ^ z          # generate / propagate of z + r
    p63 = P.bit(63)
    G, P = yield from _prefix(eng, G, P)
    # carry into 63 = G[62:31] | P[62:31] & G[30:0]; msb = p63 ^ carry (fused with B2A)
    return (yield from truth_table(eng, [p63 ^ G.bit(62), P.bit(62), G.bit(30)], _xor_and))


def less_than_public(eng, z: np.ndarray, rb: np.ndarray):
    """⟦z < r⟧ (unsigned) for public z and r shared in binary: NOT carry-out of z + ~r + 1.
    6 rounds."""
    nr = ~BShare(rb, eng.lead)
    G, P = nr.and_public(z), nr ^ z
    G = G ^ P.and_public(ONE)                # fold carry-in 1 into bit 0 (g0 | p0, disjoint)
    P = P.and_public(~ONE)
    G, P = yield from _prefix(eng, G, P)
    # carry-out = G[63:32] | P[63:32] & G[31:0]; η = 1 ^ carry-out
    return (yield from truth_table(eng, [G.bit(63) ^ ONE, P.bit(63), G.bit(31)], _xor_and))


def a2b(eng, x: AShare):
    """Binary shares of all 64 bits of x: open x − r, then a full parallel-prefix adder of
    the public z and the dealer's binary r. 7 rounds."""
    shape = x.v.shape
    m = eng.material.take("edabit", (), x.size)
    r, rb = m["r"].reshape(shape), BShare(m["rb"].reshape(shape), eng.lead)
    (z,) = yield from open_values(eng, [x.v - r])
    G, P0 = rb.and_public(z), rb ^ z
    G, _ = yield from _prefix(eng, G, P0, shifts=(1, 2, 4, 8, 16, 32))
    return P0 ^ (G << 1)
