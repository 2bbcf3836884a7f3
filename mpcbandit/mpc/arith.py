"""Arithmetic-share ops as round generators: input, open, open_to, Beaver products, truncation.

Each function takes the engine (party identity, material supply) and returns a generator
(see ``rounds.py``). Hannun et al. §3 and App. A–C.
"""

from __future__ import annotations

import math

import numpy as np

from mpcbandit.bodies import expect_field, expect_fields, kind_of
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc.fixed import encode
from mpcbandit.mpc.prg import SEED_BYTES, Prg
from mpcbandit.mpc.ring import RING_DTYPE as U64, wraps_signed, wraps_unsigned
from mpcbandit.mpc.rounds import IN_OP, Round
from mpcbandit.mpc.shares import AShare

__all__ = ["open_parts", "open_values", "input_value", "open_to", "bilinear", "square",
           "truncate", "rescale", "TRUNC_MODES"]

TRUNC_MODES = ("local", "paper", "exact", "pair")


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


def input_value(eng, value, owner: str, frac: int):
    """Owner secret-shares value among the computing parties (one one-way round).

    Parties 0..n-2 get a 32-byte seed and the array shape, the last gets the correction.
    Returns this party's AShare (None on non-computing parties)."""
    if eng.me == owner:
        x = encode(value, frac)
        seeds = [Prg().bytes(32) for _ in range(eng.n - 1)]
        shares = [Prg(s).ring(x.shape) for s in seeds]
        last = x.copy()
        for s in shares:
            last -= s
        shares.append(last)
        send, mine = {}, None
        for j, p in enumerate(eng.parties):
            if p == eng.me:
                mine = shares[j]
            else:
                send[p] = ({"v": last, "shape": list(x.shape)} if j == eng.n - 1
                           else {"seed": seeds[j], "shape": list(x.shape)})
        yield Round(send, ())
        return None if mine is None else AShare(mine, frac, eng.lead)
    if not eng.is_computing:
        return None
    got = yield Round({}, (owner,))
    body = got[owner]
    shape = peer_shape(body, owner)
    if isinstance(body, dict) and "seed" in body:
        v = Prg(peer_seed(body, owner)).ring(shape)
    else:
        v = peer_ring(body.get("v"), shape, owner)
    return AShare(v, frac, eng.lead)


def open_to(eng, x: AShare | None, to: str):
    """Reveal x to party `to` alone: the others only send (one one-way round).

    Returns the decoded float array on `to`, None elsewhere."""
    if eng.is_computing and eng.me != to:
        yield Round({to: {"v": x.v, "f": x.frac, "shape": list(x.shape)}}, ())
        return None
    if eng.me != to:
        return None
    senders = tuple(p for p in eng.parties if p != to)
    got = yield Round({}, senders)
    frac = expect_field(got[senders[0]], "f", int, senders[0], IN_OP)
    shape = peer_shape(got[senders[0]], senders[0])
    acc = x.v.copy() if x is not None else np.zeros(shape, dtype=U64)
    for p in senders:
        acc += peer_ring(expect_fields(got[p], ("v",), p, IN_OP)["v"], shape, p)
    return acc.view(np.int64).astype(np.float64) / 2.0 ** frac


def _target_frac(eng, frac: int) -> int:
    return frac if frac <= eng.frac else eng.frac


def bilinear(eng, op: str, x: AShare, y: AShare):
    """Beaver product for every bilinear op (``mul`` elementwise, ``matmul``): one triple batch
    and one opening per call, then truncation back to the engine's fractional bits."""
    if op == "mul":
        xv, yv = (x.v, y.v) if x.v.shape == y.v.shape else np.broadcast_arrays(x.v, y.v)
        m = eng.material.take("mul", (), xv.size)
        a, b, c = (m[k].reshape(xv.shape) for k in "abc")
        f = np.multiply
        squeeze = None
    elif op == "matmul":
        xv = x.v[None, :] if x.v.ndim == 1 else x.v
        yv = y.v[:, None] if y.v.ndim == 1 else y.v
        squeeze = tuple(ax for ax, one in ((-2, x.v.ndim == 1), (-1, y.v.ndim == 1)) if one)
        m = eng.material.take("matmul", (xv.shape, yv.shape), 1)
        a, b, c = m["a"][0], m["b"][0], m["c"][0]
        f = np.matmul
    else:
        raise ValueError(f"unknown bilinear op {op!r}")
    eps, dlt = yield from open_values(eng, [xv - a, yv - b])
    z = c + f(eps, b) + f(a, dlt)
    if eng.lead:
        z += f(eps, dlt)
    if squeeze:
        z = z.squeeze(axis=squeeze)
    out = AShare(z, x.frac + y.frac, eng.lead)
    return (yield from rescale(eng, out))


def square(eng, x: AShare):
    """x² with a Beaver pair (a, a²): one opening, then truncation."""
    m = eng.material.take("square", (), x.size)
    a, b = m["a"].reshape(x.shape), m["b"].reshape(x.shape)
    (eps,) = yield from open_values(eng, [x.v - a])
    z = b + np.uint64(2) * eps * a
    if eng.lead:
        z += eps * eps
    return (yield from rescale(eng, AShare(z, 2 * x.frac, eng.lead)))


def rescale(eng, x: AShare):
    """Truncate x down to the engine's fractional bits if a product left it above."""
    target = _target_frac(eng, x.frac)
    if target == x.frac:
        return x
    return (yield from truncate(eng, x, x.frac - target))


def truncate(eng, x: AShare, d: int, mode: str | None = None):
    """⟦x / 2^d⟧ with the engine's truncation (local | paper | exact); frac drops by d."""
    mode = mode or eng.trunc
    if d == 0:
        return x
    sh = np.uint64(d)
    if mode == "pair":  # stochastic rounding: unbiased as it is
        from mpcbandit.mpc.fused import pend, settle  # fused layer sits above arith

        return (yield from settle(eng, pend(eng, x, d)))
    # each of the n shares is floored, losing (n−1)/2 units on average; the lead adds
    # n/2 units first so that the result is unbiased
    x = AShare(x.v + np.uint64(eng.n << (d - 1)) if eng.lead else x.v, x.frac, x.lead)
    if mode == "local":
        if eng.n != 2:
            raise ValueError(f"local truncation is for 2 computing parties, not {eng.n}")
        v = (x.v.view(np.int64) >> np.int64(d)).view(U64)  # SecureML: each share shifts itself
        return AShare(v, x.frac - d, eng.lead)
    up = np.uint64(64 - d)
    if mode == "paper":
        # Alg. 3 (Hannun et al. App. C), η skipped as in the paper
        m = eng.material.take("trunc", (), x.size)
        r, theta_r = m["r"].reshape(x.shape), m["theta"].reshape(x.shape)
        z_mine = x.v + r
        beta = wraps_signed([x.v, r]).view(U64)
        (parts,) = yield from open_parts(eng, [z_mine])
        theta = beta - theta_r
        if eng.lead:
            theta += wraps_signed(parts).view(U64)
        v = (x.v.view(np.int64) >> np.int64(d)).view(U64) - (theta << up)
        return AShare(v, x.frac - d, eng.lead)
    if mode == "exact":
        from mpcbandit.mpc.binary import less_than_public  # binary layer sits above arith

        # Alg. 3 with η = [z < r] computed by a comparison circuit; unsigned frame, offset 2^62
        m = eng.material.take("trunc_exact", (), x.size)
        r, theta_r, rb = (m[k].reshape(x.shape) for k in ("r", "theta", "rb"))
        off = np.uint64(1 << 62)
        xp = x.v + off if eng.lead else x.v
        z_mine = xp + r
        beta = wraps_unsigned([xp, r]).view(U64)
        (parts,) = yield from open_parts(eng, [z_mine])
        z = parts[0].copy()
        for p in parts[1:]:
            z += p
        eta = yield from less_than_public(eng, z, rb)
        theta = beta - theta_r - eta.v
        if eng.lead:
            theta += wraps_unsigned(parts).view(U64)
        v = (xp >> sh) - (theta << up)
        if eng.lead:
            v -= np.uint64(1 << (62 - d))
        return AShare(v, x.frac - d, eng.lead)
    raise ValueError(f"unknown truncation {mode!r} (choose from {', '.join(TRUNC_MODES)})")
