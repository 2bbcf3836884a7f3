"""Correlated randomness, kind by kind: what each party expands from its seed, what the dealer
derives, and one party's correction (pure functions; the dealer and the parties share them).

A batch of ``units`` units of one kind is a set of components, each an array of shape
``(units, *unit_shape)`` in the arithmetic (``A``, sum mod 2^64), binary (``B``, XOR of words)
or bit (``b``, XOR of bit 0) domain. *Free* components are random: every party expands its
share from its own seed and the plaintext is whatever the shares add up to. *Derived*
components (c = a·b, wrap counts, ...) are computed by the dealer; every party but one expands
its shares from its seed too and that one, the *corrected* party, receives a correction. So the
dealer sends one 32-byte seed per party per batch plus one ring element per derived element to
the corrected party (CrypTen's trusted-third-party scheme; the dealer picks the corrected party
batch by batch to spread those bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.ring import RING_DTYPE, wraps_signed, wraps_unsigned
from mpcbandit.mpc.triangle import outer_upper, sym_matvec

__all__ = ["Component", "Kind", "KINDS", "layout", "expand_shares", "make_batch", "kind_key",
           "row_split"]

U64 = RING_DTYPE


@dataclass(frozen=True)
class Component:
    name: str
    unit_shape: tuple[int, ...]
    domain: str  # "A" arithmetic, "B" binary words, "b" bits (bit 0 of a word)
    free: bool
    #: a derived arithmetic component delivered mod 2^32 (the corrected party's share is right
    #: mod 2^32 only): for terms an op multiplies by 2^32 or more, half the correction bytes
    narrow: bool = False


@dataclass(frozen=True)
class Kind:
    """A kind of material: its components for given params, and how the dealer derives them."""

    components: Callable[..., list[Component]]
    derive: Callable[..., dict[str, np.ndarray]]
    #: (rows, params of one row) when every component carries the params' leading axis as a
    #: batch axis (the same product row by row), else None: such material may be dealt by row
    rows: Callable[..., tuple[int, tuple] | None] = lambda *params: None


def _u01(prg: Prg, shape) -> np.ndarray:
    """Uniform [0, 1) doubles with 53 random bits, from a cryptographic PRG."""
    return (prg.ring(shape) >> np.uint64(11)).astype(np.float64) / 2.0 ** 53


def _matmul_shape(sx, sy) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(sx[:-2]), tuple(sy[:-2]))) + (sx[-2], sy[-1])


def _aligned(f: Callable, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """f on per-unit arrays (U, ...) whose batch axes after U are padded to align."""
    while a.ndim < b.ndim:
        a = a[:, None]
    while b.ndim < a.ndim:
        b = b[:, None]
    return f(a, b)


def _vector_pair_shape(sx, sy, last: int) -> tuple[int, ...]:
    return tuple(np.broadcast_shapes(tuple(sx[:-1]), tuple(sy[:-1]))) + (last,)


def _triangle_size(d: int) -> int:
    return d * (d + 1) // 2


def _batch_rows(least_ndim: int) -> Callable[..., tuple[int, tuple] | None]:
    """Kind.rows for a kind of two operand shapes whose leading axes are batch axes when both
    have least_ndim axes or more, as many as each other, and the same leading length."""
    def rows(sx, sy):
        sx, sy = tuple(sx), tuple(sy)
        if len(sx) == len(sy) >= least_ndim and sx[0] == sy[0]:
            return sx[0], (sx[1:], sy[1:])
        return None
    return rows


KINDS: dict[str, Kind] = {
    # Beaver triple for elementwise products: c = a·b
    "mul": Kind(lambda: [Component("a", (), "A", True), Component("b", (), "A", True),
                         Component("c", (), "A", False)],
                lambda p, f, s, prg, u: {"c": f["a"] * f["b"]}),
    # Beaver pair for squares: b = a²
    "square": Kind(lambda: [Component("a", (), "A", True), Component("b", (), "A", False)],
                   lambda p, f, s, prg, u: {"b": f["a"] * f["a"]}),
    # bilinear triple for matmul of shapes sx @ sy (both at least 2-D)
    "matmul": Kind(lambda sx, sy: [Component("a", tuple(sx), "A", True),
                                   Component("b", tuple(sy), "A", True),
                                   Component("c", _matmul_shape(sx, sy), "A", False)],
                   lambda p, f, s, prg, u: {"c": _aligned(np.matmul, f["a"], f["b"])},
                   _batch_rows(3)),
    # triple for M v, M symmetric given by its upper triangles (sx = (..., E)), v of sy = (..., D)
    "symmatvec": Kind(lambda sx, sy: [Component("a", tuple(sx), "A", True),
                                      Component("b", tuple(sy), "A", True),
                                      Component("c", _vector_pair_shape(sx, sy, sy[-1]), "A",
                                                False)],
                      lambda p, f, s, prg, u: {"c": _aligned(sym_matvec, f["a"], f["b"])},
                      _batch_rows(2)),
    # triple for the upper triangle of p qᵀ, p of sx = (..., D), q of sy = (..., D)
    "outer_upper": Kind(lambda sx, sy: [Component("a", tuple(sx), "A", True),
                                        Component("b", tuple(sy), "A", True),
                                        Component("c", _vector_pair_shape(
                                            sx, sy, _triangle_size(sx[-1])), "A", False)],
                        lambda p, f, s, prg, u: {"c": _aligned(outer_upper, f["a"], f["b"])},
                        _batch_rows(2)),
    # triple for the outer product of three vectors, z[i, j, k] = p_i q_j w_k in one opening:
    # a, b, c and every product of two or three of them
    "outer3": Kind(lambda i, j, k: [Component("a", (i,), "A", True),
                                    Component("b", (j,), "A", True),
                                    Component("c", (k,), "A", True),
                                    Component("ab", (i, j), "A", False),
                                    Component("ac", (i, k), "A", False),
                                    Component("bc", (j, k), "A", False),
                                    Component("abc", (i, j, k), "A", False)],
                   lambda p, f, s, prg, u: _outer3_products(f["a"], f["b"], f["c"])),
    # q·(u uᵀ)'s upper triangle in one opening of q (sq = (..., 1)) and u (su = (..., D)):
    # masks al of q and a of u; a aᵀ, al·a and al·a aᵀ (triangles)
    "scaled_outer": Kind(lambda sq, su: [Component("al", tuple(sq), "A", True),
                                         Component("a", tuple(su), "A", True),
                                         Component("aa", (*su[:-1], _triangle_size(su[-1])),
                                                   "A", False),
                                         Component("al_a", tuple(su), "A", False),
                                         Component("al_aa", (*su[:-1], _triangle_size(su[-1])),
                                                   "A", False)],
                         lambda p, f, s, prg, u: _scaled_outer_products(f["al"], f["a"]),
                         _batch_rows(2)),
    # binary (AND) triple on 64-bit words: c = a & b
    "and": Kind(lambda: [Component("a", (), "B", True), Component("b", (), "B", True),
                         Component("c", (), "B", False)],
                lambda p, f, s, prg, u: {"c": f["a"] & f["b"]}),
    # Alg. 3 (Hannun et al. App. C): random r and the wrap count θ_r of its (signed) shares
    "trunc": Kind(lambda: [Component("r", (), "A", True), Component("theta", (), "A", False)],
                  lambda p, f, s, prg, u: {"theta": wraps_signed(s["r"]).view(U64)}),
    # truncation pair: r and ⌊r/2^d⌋ (r read as signed) for one-round probabilistic truncation
    "trpair": Kind(lambda d: [Component("r", (), "A", True), Component("rt", (), "A", False)],
                   lambda p, f, s, prg, u: {"rt": (f["r"].view(np.int64) >> np.int64(p[0])).view(U64)}),
    # exact truncation: r, θ_r of its unsigned shares, and r in binary for the η comparison
    "trunc_exact": Kind(lambda: [Component("r", (), "A", True), Component("theta", (), "A", False),
                                 Component("rb", (), "B", False)],
                        lambda p, f, s, prg, u: {"theta": wraps_unsigned(s["r"]).view(U64),
                                              "rb": f["r"].copy()}),
    # a product of two bits each held by one party (2 parties): party 0 masks its bit with its
    # share of a, party 1 with its share of b; c = a_0·b_1, shared arithmetically
    "bitprod": Kind(lambda: [Component("a", (), "b", True), Component("b", (), "b", True),
                             Component("c", (), "A", False)],
                    lambda p, f, s, prg, u: {"c": s["a"][0] * s["b"][1]}),
    # x·⌊y/2^d⌋ in one round (2 parties, d <= 32, x broadcast into y): masks a of x (shape
    # sx) and b of y's shifted share (sy); party 0's share of the bits al and party 1's of be
    # mask their top bits; c = a·b, and the products of a with those bits (needed mod 2^d
    # only: narrow), all of y's shape
    "multrunc": Kind(lambda sx, sy: [Component("a", tuple(sx), "A", True),
                                     *(Component(k, tuple(sy), dom, True)
                                       for k, dom in (("b", "A"), ("al", "b"), ("be", "b"))),
                                     *(Component(k, tuple(sy), "A", False, narrow=k != "c")
                                       for k in ("c", "a_al", "a_be", "al_be", "a_al_be"))],
                     lambda p, f, s, prg, u: _multrunc_products(f["a"], f["b"], s["al"][0],
                                                                s["be"][1]),
                     _batch_rows(1)),
    # r shared both arithmetically and in binary (for A2B / MSB)
    "edabit": Kind(lambda: [Component("r", (), "A", True), Component("rb", (), "B", False)],
                   lambda p, f, s, prg, u: {"rb": f["r"].copy()}),
    # one-time truth table over k random bits w: arithmetic one-hot of the index Σ w_j 2^j
    "tt": Kind(lambda k: [Component("w", (k,), "b", True), Component("h", (2 ** k,), "A", False)],
               lambda p, f, s, prg, u: {"h": _onehot_of_bits(f["w"])}),
    # Bernoulli(eps) bits as integers (0 fractional bits)
    "bern": Kind(lambda eps: [Component("y", (), "A", False)],
                 lambda p, f, s, prg, u: _derive_samples("bern", p, u, prg)),
    # Uniform(0, 1) with frac fractional bits
    "unif": Kind(lambda frac: [Component("v", (), "A", False)],
                 lambda p, f, s, prg, u: _derive_samples("unif", p, u, prg)),
    # y ~ Bernoulli(eps), v ~ Uniform(0,1)^vlen and y·v (Alg. 1 line 13)
    "yv": Kind(lambda eps, frac, vlen: [Component("y", (), "A", False),
                                        Component("v", (vlen,), "A", False),
                                        Component("yv", (vlen,), "A", False)],
               lambda p, f, s, prg, u: _derive_samples("yv", p, u, prg)),
    # a uniformly random permutation of 1..A (integers)
    "perm": Kind(lambda a: [Component("g", (a,), "A", False)],
                 lambda p, f, s, prg, u: _derive_samples("perm", p, u, prg)),
}


def _outer3_products(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> dict[str, np.ndarray]:
    """Per unit (axis 0): the outer products ab, ac, bc and abc (wrapping mod 2^64)."""
    ab = a[:, :, None] * b[:, None, :]
    return {"ab": ab, "ac": a[:, :, None] * c[:, None, :], "bc": b[:, :, None] * c[:, None, :],
            "abc": ab[:, :, :, None] * c[:, None, None, :]}


def _multrunc_products(a, b, al, be) -> dict[str, np.ndarray]:
    """Per unit: a·b, a·α, a·β, α·β, a·α·β (α = party 0's share of al, β = party 1's of be)."""
    al_be = al * be
    return {"c": _aligned(np.multiply, a, b), "a_al": _aligned(np.multiply, a, al),
            "a_be": _aligned(np.multiply, a, be), "al_be": al_be,
            "a_al_be": _aligned(np.multiply, a, al_be)}


def _scaled_outer_products(al, a) -> dict[str, np.ndarray]:
    """Per unit: a aᵀ (upper triangles), al·a and al·a aᵀ; al broadcasts over a's last axis."""
    aa = outer_upper(a, a)
    return {"aa": aa, "al_a": al * a, "al_aa": al * aa}


def _onehot_of_bits(w: np.ndarray) -> np.ndarray:
    k = w.shape[-1]
    idx = (w.astype(np.int64) << np.arange(k)).sum(axis=-1)
    return (idx[..., None] == np.arange(2 ** k)).astype(U64)


def _derive_samples(kind: str, params: tuple, units: int, prg: Prg) -> dict[str, np.ndarray]:
    """Plaintext samples for the dealer-drawn kinds (Bernoulli, Uniform, y·v, permutations)."""
    if kind == "bern":
        (eps,) = params
        return {"y": (_u01(prg, units) < eps).astype(U64)}
    if kind == "unif":
        (frac,) = params
        return {"v": prg.ring(units) >> np.uint64(64 - frac)}
    if kind == "yv":
        eps, frac, vlen = params
        y = (_u01(prg, units) < eps).astype(U64)
        v = prg.ring((units, vlen)) >> np.uint64(64 - frac)
        return {"y": y, "v": v, "yv": v * y[:, None]}
    if kind == "perm":
        (a,) = params
        keys = prg.ring((units, a))
        return {"g": (np.argsort(keys, axis=1) + 1).astype(U64)}
    raise KeyError(kind)


def kind_key(kind: str, params: tuple) -> tuple:
    """A hashable, wire-friendly key of (kind, params)."""
    return (kind, *(tuple(p) if isinstance(p, (list, tuple)) else p for p in params))


def row_split(kind: str, params: tuple) -> tuple[int, tuple] | None:
    """(rows, params of one row) when one unit of kind with params is that many independent
    rows of a smaller kind (Kind.rows), else None."""
    return KINDS[kind].rows(*params) if kind in KINDS else None


def layout(kind: str, params: tuple) -> list[Component]:
    """The components of one unit of kind with params; KeyError names unknown kinds."""
    if kind not in KINDS:
        raise KeyError(f"unknown material kind {kind!r} (known: {', '.join(KINDS)})")
    return KINDS[kind].components(*params)


def _draw(prg: Prg, c: Component, units: int) -> np.ndarray:
    x = prg.ring((units, *c.unit_shape))
    return x & np.uint64(1) if c.domain == "b" else x


def _combine(c: Component, parts: list[np.ndarray]) -> np.ndarray:
    out = parts[0].copy()
    for p in parts[1:]:
        if c.domain == "A":
            out += p
        else:
            out ^= p
    return out


def _correct(c: Component, plain: np.ndarray, others: list[np.ndarray]) -> np.ndarray:
    out = plain.astype(U64, copy=True)
    for p in others:
        if c.domain == "A":
            out -= p
        else:
            out ^= p
    return out


def expand_shares(kind: str, params: tuple, units: int, seed: bytes, *, corrected: bool,
                  corrections: list[np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """One party's shares of a batch: everything from its seed, the corrected party's derived
    components from the dealer's corrections (in component order)."""
    prg = Prg(seed)
    comps = layout(kind, params)
    derived = [c for c in comps if not c.free]
    if corrected and len(corrections or []) != len(derived):
        raise ValueError(f"material {kind}: expected {len(derived)} corrections, "
                         f"got {len(corrections or [])}")
    out, k = {}, 0
    for c in comps:
        if corrected and not c.free:
            arr = np.asarray(corrections[k])
            k += 1
            want = np.uint32 if c.narrow else U64
            if arr.shape != (units, *c.unit_shape) or arr.dtype != want:
                raise ValueError(f"material {kind}.{c.name}: correction is {arr.dtype} of shape "
                                 f"{arr.shape}, expected {np.dtype(want)} of shape "
                                 f"{(units, *c.unit_shape)}")
            out[c.name] = arr.astype(U64)
        else:
            out[c.name] = _draw(prg, c, units)
    return out


def make_batch(kind: str, params: tuple, units: int, n: int, dealer_prg: Prg,
               corrected: int | None = None) -> tuple[list[bytes], list[np.ndarray]]:
    """The dealer's side of a batch for n parties: one fresh seed per party and the corrections
    of party `corrected` (the last party when None)."""
    k = n - 1 if corrected is None else corrected
    comps = layout(kind, params)
    seeds = [dealer_prg.bytes(32) for _ in range(n)]
    prgs = [Prg(s) for s in seeds]
    shares: dict[str, list[np.ndarray]] = {}
    for c in comps:  # same draw order as expand_shares
        shares[c.name] = [_draw(p, c, units) for i, p in enumerate(prgs) if c.free or i != k]
    free_plain = {c.name: _combine(c, shares[c.name]) for c in comps if c.free}
    derived_plain = KINDS[kind].derive(params, free_plain, shares, dealer_prg, units)
    corrections = [_correct(c, derived_plain[c.name], shares[c.name]) for c in comps if not c.free]
    return seeds, [x.astype(np.uint32) if c.narrow else x
                   for c, x in zip([c for c in comps if not c.free], corrections)]
