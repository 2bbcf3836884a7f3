"""Arithmetic-share ops as round generators: input, open_to and Beaver products.

Each function takes the engine (party identity, material supply) and returns a generator
(see ``rounds.py``). Hannun et al. §3 and App. A–C.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.bodies import expect_field, expect_fields
from mpcbandit.mpc import truncation
from mpcbandit.mpc.fixed import encode
from mpcbandit.mpc.opening import open_values, peer_ring, peer_seed, peer_shape
from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.rounds import IN_OP, Round
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.triangle import outer_upper, sym_matvec

__all__ = ["input_value", "open_to", "bilinear", "outer3", "scaled_outer_upper", "square"]


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


#: bilinear ops on (x, y) with one triple per call: the product of plain ring arrays
_PRODUCTS = {"matmul": np.matmul, "symmatvec": sym_matvec, "outer_upper": outer_upper}


def bilinear(eng, op: str, x: AShare, y: AShare, rescale: bool = True):
    """Beaver product for every bilinear op: one triple batch and one opening per call, then
    truncation back to the engine's fractional bits; with rescale=False the exact product is
    returned at x.frac + y.frac bits (no truncation, no rounding: for sums of products
    truncated once, or scores compared at full precision).

    Ops: ``mul`` (elementwise), ``matmul`` (numpy's), ``symmatvec`` (x the upper triangles
    (..., E) of symmetric matrices, y a vector (D,): M y) and ``outer_upper`` (the upper
    triangles (..., E) of x yᵀ for vectors (..., D)); the last two mask and open triangles
    only, and their triples hold only what the product needs."""
    squeeze = None
    if op == "mul":
        xv, yv = (x.v, y.v) if x.v.shape == y.v.shape else np.broadcast_arrays(x.v, y.v)
        m = eng.material.take("mul", (), xv.size)
        a, b, c = (m[k].reshape(xv.shape) for k in "abc")
        f = np.multiply
    elif op in _PRODUCTS:
        xv, yv = x.v, y.v
        if op == "matmul":
            xv = x.v[None, :] if x.v.ndim == 1 else x.v
            yv = y.v[:, None] if y.v.ndim == 1 else y.v
            squeeze = tuple(ax for ax, one in ((-2, x.v.ndim == 1), (-1, y.v.ndim == 1)) if one)
        m = eng.material.take(op, (xv.shape, yv.shape), 1)
        a, b, c = m["a"][0], m["b"][0], m["c"][0]
        f = _PRODUCTS[op]
    else:
        raise ValueError(f"unknown bilinear op {op!r}")
    eps, dlt = yield from open_values(eng, [xv - a, yv - b])
    # xy = c + f(eps, b) + f(a, dlt) + f(eps, dlt); the lead adds the public term, and
    # f(eps, b) + f(eps, dlt) = f(eps, b + dlt) by bilinearity (exact mod 2^64): one product less
    z = c + f(eps, b + dlt if eng.lead else b) + f(a, dlt)
    if squeeze:
        z = z.squeeze(axis=squeeze)
    out = AShare(z, x.frac + y.frac, eng.lead)
    return (yield from truncation.rescale(eng, out)) if rescale else out


def outer3(eng, p: AShare, q: AShare, w: AShare):
    """The outer product z[i, j, k] = p_i q_j w_k of three shared vectors in one opening (a
    triple of three factors), exact at p.frac + q.frac + w.frac bits: where two chained
    products would take two rounds, e.g. o_a · r_t · x_t."""
    m = eng.material.take("outer3", (p.size, q.size, w.size), 1)
    a, b, c, ab, ac, bc, abc = (m[k][0] for k in ("a", "b", "c", "ab", "ac", "bc", "abc"))
    e, f, g = yield from open_values(eng, [p.v.ravel() - a, q.v.ravel() - b, w.v.ravel() - c])
    # (e + a)(f + b)(g + c), expanded; e, f, g are public, so the lead adds their product alone
    e, f, g = e[:, None, None], f[None, :, None], g[None, None, :]
    z = abc + e * bc[None] + f * ac[:, None, :] + g * ab[:, :, None]
    z += e * f * c[None, None, :] + e * g * b[None, :, None] + f * g * a[:, None, None]
    if eng.lead:
        z += e * f * g
    return AShare(z, p.frac + q.frac + w.frac, eng.lead)


def scaled_outer_upper(eng, q: AShare, u: AShare):
    """The upper triangles of q·u uᵀ for q (..., 1) and u (..., D) in one opening of q and u
    (a triple of q's mask, u's and their products), exact at q.frac + 2·u.frac bits: where
    u uᵀ and then q times it open the triangle too."""
    m = eng.material.take("scaled_outer", (q.shape, u.shape), 1)
    al, a, aa, al_a, al_aa = (m[k][0] for k in ("al", "a", "aa", "al_a", "al_aa"))
    g, e = yield from open_values(eng, [q.v - al, u.v - a])
    # (g + al)(e + a)(e + a)ᵀ, expanded; g and e are public, so the lead adds g e eᵀ alone
    ee = outer_upper(e, e)
    z = g * (outer_upper(e, a) + outer_upper(a, e) + aa) + al * ee
    z += outer_upper(e, al_a) + outer_upper(al_a, e) + al_aa
    if eng.lead:
        z += g * ee
    return AShare(z, q.frac + 2 * u.frac, eng.lead)


def square(eng, x: AShare):
    """x² with a Beaver pair (a, a²): one opening, then truncation."""
    m = eng.material.take("square", (), x.size)
    a, b = m["a"].reshape(x.shape), m["b"].reshape(x.shape)
    (eps,) = yield from open_values(eng, [x.v - a])
    z = b + np.uint64(2) * eps * a
    if eng.lead:
        z += eps * eps
    return (yield from truncation.rescale(eng, AShare(z, 2 * x.frac, eng.lead)))
