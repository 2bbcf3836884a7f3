"""Binary (XOR) shares on packed 64-bit words: AND, the parallel-prefix carry circuit, MSB,
A2B, B2A and comparison with a public value (Hannun et al. App. A.1–A.2).

Round counts (any number of parties): AND 1; MSB 7 (open x − r, 5 prefix levels, and the
last level fused with B2A through a one-time truth table); A2B 7; B2A 1.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from mpcbandit.mpc.opening import open_values
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.shares import ONES, AShare, BShare

__all__ = ["and_", "truth_table", "b2a", "msb", "a2b", "less_than_public"]

ONE = np.uint64(1)
#: shifts of the Kogge–Stone levels of a full 64-bit adder
FULL_LEVELS = (1, 2, 4, 8, 16, 32)


def and_(eng, xs: list[BShare], ys: list[BShare]):
    """Pairwise ANDs xs[k] & ys[k] with binary Beaver triples; one round for all of them."""
    shapes = [x.v.shape for x in xs]
    if len(xs) == 1:
        X, Y = xs[0].v.ravel(), np.broadcast_to(ys[0].v, shapes[0]).ravel()
    else:
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
    table of fn (one-time truth table). fn gets k uint64 arrays of shape (N, 2^k) holding 0/1
    (one column per value of w) and may broadcast per-element public data as (N, 1)."""
    k = len(bits)
    shape = bits[0].v.shape
    size = int(np.prod(shape, dtype=np.int64))
    m = eng.material.take("tt", (k,), size)
    w, h = m["w"], m["h"]
    masked = yield from open_values(eng, [(b.v.ravel() & ONE) ^ w[:, j] for j, b in enumerate(bits)],
                                    binary=True)
    idx = np.arange(2 ** k, dtype=U64)
    args = [masked[j][:, None] ^ ((idx >> np.uint64(j)) & ONE)[None, :] for j in range(k)]
    table = fn(*args) & ONE                                   # fn(bits) if w = idx
    out = (h * table).sum(axis=1, dtype=U64)
    return AShare(out.reshape(shape), 0, eng.lead)


def b2a(eng, bit: BShare):
    """Arithmetic share (0 fractional bits) of the bit-0 of a binary share; one round."""
    return (yield from truth_table(eng, [bit], lambda t: t))


def _prefix(eng, G: BShare, P: BShare, shifts=FULL_LEVELS):
    """Kogge–Stone levels on whole words: after shift s, position i covers bits i−2s+1..i;
    one round each (used by the full adder of a2b)."""
    for s in shifts:
        if s == shifts[-1]:
            (pg,) = yield from and_(eng, [P], [G << s])
            G = G ^ pg
        else:
            pg, pp = yield from and_(eng, [P, P], [G << s, P << s])
            G, P = G ^ pg, pp
    return G, P


def _mask(*bits_of_block: int, block: int) -> np.uint64:
    word = 0
    for base in range(0, 64, block):
        for b in bits_of_block:
            word |= 1 << (base + b)
    return np.uint64(word)


#: positions whose level-k outputs the carry into bit 63 needs (in the packed layout)
_OUT = [_mask(0, block=2), _mask(2, 3, block=4), _mask(4, 5, 6, 7, block=8),
        _mask(*range(8, 16), block=16), _mask(*range(16, 32), block=32)]
#: translation of each of the 16 elements packed in a level-5 word (merge order)
_DELTA = np.array([b1 - 2 * b2 - 4 * b3 - 8 * b4 for b1 in (0, 1) for b2 in (0, 1)
                   for b3 in (0, 1) for b4 in (0, 1)], dtype=np.int64)


def _carry62(eng, g: np.ndarray, p: np.ndarray):
    """Generate/propagate of bits 31..62 and generate of bits 0..30, per element: the inputs
    of the carry into bit 63. Five Kogge–Stone levels (5 rounds) on a packed layout: each
    level only computes the positions later levels need, its two ANDs share one word, and
    after each level two words merge into one, so the k-th level moves N/2^(k−1) words
    instead of 2N (about 5x fewer bytes and triples than whole words)."""
    n = g.size
    m = -(-n // 16) * 16
    if m != n:
        g = np.concatenate([g, np.zeros(m - n, dtype=U64)])
        p = np.concatenate([p, np.zeros(m - n, dtype=U64)])
    for k in range(5):
        s = np.uint64(1 << k)
        o = _OUT[k]
        po = p & o
        x = po | (po >> s)                                    # P twice: for P&G and P&P
        y = ((g << s) & o) | (((p << s) & o) >> s)
        (z,) = yield from and_(eng, [BShare(x, eng.lead)], [BShare(y, eng.lead)])
        g = g ^ (z.v & o)
        p = (z.v << s) & o
        if k < 4:                                             # pack two words into one
            h = g.size // 2
            if k == 0:
                g = (g[:h] & o) | ((g[h:] & o) << np.uint64(1))
                p = (p[:h] & o) | ((p[h:] & o) << np.uint64(1))
            else:
                g = (g[:h] & o) | ((g[h:] & o) >> s)
                p = (p[:h] & o) | ((p[h:] & o) >> s)
    def pick(words, pos):
        sh = (pos + _DELTA).astype(np.uint64)
        return ((words[None, :] >> sh[:, None]) & ONE).ravel()[:n]
    return pick(g, 62), pick(p, 62), pick(g, 30)


def _xor_and(t, u, v):
    return t ^ (u & v)


def msb(eng, x: AShare):
    """⟦x < 0⟧ (0/1, 0 fractional bits): x = z + r with z = x − r opened and r given to the
    parties in binary by the dealer; MSB(z + r) = p63 ⊕ carry into bit 63, the last
    carry level fused with B2A in a truth table. 7 rounds."""
    shape = x.v.shape
    m = eng.material.take("edabit", (), x.size)
    r, rb = m["r"].reshape(shape), m["rb"].ravel()
    (z,) = yield from open_values(eng, [x.v - r])
    zf = z.ravel()
    g = rb & zf                                               # generate / propagate of z + r
    p = rb ^ zf if eng.lead else rb.copy()
    g62, p62, g30 = yield from _carry62(eng, g, p)
    p63 = (p >> np.uint64(63)) & ONE
    bits = [BShare(a, eng.lead) for a in (p63 ^ g62, p62, g30)]
    out = yield from truth_table(eng, bits, _xor_and)
    return AShare(out.v.reshape(shape), 0, eng.lead)


def less_than_public(eng, z: np.ndarray, rb: np.ndarray):
    """⟦z < r⟧ (unsigned) for public z and r shared in binary: NOT carry-out of z + ~r + 1,
    with the top bit handled in the final truth table. 6 rounds."""
    shape = z.shape
    zf, nr = z.ravel(), rb.ravel() ^ (ONES if eng.lead else np.uint64(0))
    g = nr & zf
    p = nr ^ zf if eng.lead else nr.copy()
    g = g ^ (p & ONE)                                         # carry-in 1 folded into bit 0
    p = p & ~ONE
    g62, p62, g30 = yield from _carry62(eng, g, p)
    r63 = (rb.ravel() >> np.uint64(63)) & ONE
    z63 = ((zf >> np.uint64(63)) & ONE)[:, None].astype(bool)

    def eta(r, a, b, d):
        c = a ^ (b & d)                                       # carry into bit 63
        return np.where(z63, r & (c ^ ONE), ONE ^ ((r ^ ONE) & c))

    bits = [BShare(a, eng.lead) for a in (r63, g62, p62, g30)]
    out = yield from truth_table(eng, bits, eta)
    return AShare(out.v.reshape(shape), 0, eng.lead)


def a2b(eng, x: AShare):
    """Binary shares of all 64 bits of x: open x − r, then a full parallel-prefix adder of
    the public z and the dealer's binary r. 7 rounds."""
    shape = x.v.shape
    m = eng.material.take("edabit", (), x.size)
    r, rb = m["r"].reshape(shape), BShare(m["rb"].reshape(shape), eng.lead)
    (z,) = yield from open_values(eng, [x.v - r])
    G, P0 = rb.and_public(z), rb ^ z
    G, _ = yield from _prefix(eng, G, P0)
    return P0 ^ (G << 1)
