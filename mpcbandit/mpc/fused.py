"""Truncations fused into the next multiplication's opening (``trunc="pair"``).

A product w at 2L fractional bits is truncated with a dealer pair (r, ⌊r/2^d⌋): open
z = w + r, then ⟦w/2^d⟧ = ⌊z/2^d⌋ − ⟦⌊r/2^d⌋⟧ (probabilistic truncation: unbiased stochastic
rounding, fails with probability |w|/2^64 like Alg. 3, for any number of parties). The value
is ``Pending`` until z is opened; when it feeds a Beaver product, z and the product's masked
operand (a − base, uniform because a is) are opened in the SAME round, so a chain of k
products costs k + 1 rounds instead of 2k. Used by exp and reciprocal in "pair" mode.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpcbandit.mpc.fixed import encode
from mpcbandit.mpc.opening import open_values
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.shares import AShare

__all__ = ["Pending", "pend", "fused_products", "settle"]


@dataclass(eq=False)
class Pending:
    """value = coef·⌊z/2^d⌋ (held by the lead) + base, with z = open(w + r) still to come."""

    zshare: np.ndarray      # this party's share of w + r
    d: int
    coef: int
    base: np.ndarray        # share: −coef·⌊r/2^d⌋ plus whatever was added since
    frac: int
    lead: bool

    @property
    def shape(self):
        return self.base.shape

    def _with(self, coef: int, base: np.ndarray) -> "Pending":
        return Pending(self.zshare, self.d, coef, base, self.frac, self.lead)

    def __add__(self, other) -> "Pending":
        if isinstance(other, AShare):
            return self._with(self.coef, self.base + other.v)
        c = encode(other, self.frac)
        return self._with(self.coef, self.base + c if self.lead else self.base)

    __radd__ = __add__

    def __neg__(self) -> "Pending":
        return self._with(-self.coef, np.uint64(0) - self.base)

    def __rsub__(self, other) -> "Pending":
        return (-self) + other

    def __mul__(self, k: int) -> "Pending":
        return self._with(self.coef * int(k), self.base * np.uint64(int(k) % 2 ** 64))

    __rmul__ = __mul__


def pend(eng, w: AShare, d: int) -> Pending:
    """w / 2^d, pending (no round yet): takes a truncation pair from the dealer."""
    m = eng.material.take("trpair", (d,), w.size)
    r, rt = m["r"].reshape(w.shape), m["rt"].reshape(w.shape)
    return Pending(w.v + r, d, 1, np.uint64(0) - rt, w.frac - d, eng.lead)


def _floor_term(z: np.ndarray, p: Pending) -> np.ndarray:
    return (z.view(np.int64) >> np.int64(p.d)).view(U64) * np.uint64(p.coef % 2 ** 64)


def _settled(eng, p: Pending, z: np.ndarray) -> AShare:
    v = p.base + _floor_term(z, p) if eng.lead else p.base.copy()
    return AShare(v, p.frac, eng.lead)


def fused_products(eng, products: list[tuple[str, object, object]]):
    """Beaver products ("mul" x·y or "square" x·x) of AShares or Pendings in ONE round that
    also opens every Pending's z. Returns (unscaled products as AShares at fx+fy bits,
    {id(pending): settled AShare})."""
    pend_ids: dict[int, Pending] = {}
    opens: list[np.ndarray] = []
    plan = []
    for op, x, y in products:
        size = int(np.prod(x.shape, dtype=np.int64))
        if op == "mul":
            m = eng.material.take("mul", (), size)
            masks = [m["a"].reshape(x.shape), m["b"].reshape(x.shape)]
            operands = [x, y]
        else:
            m = eng.material.take("square", (), size)
            masks = [m["a"].reshape(x.shape)]
            operands = [x]
        slots = []
        for v, a in zip(operands, masks):
            if isinstance(v, Pending):
                pend_ids[id(v)] = v
                slots.append(len(opens))
                opens.append(a - v.base)                  # uniform; ε = coef·⌊z/2^d⌋ − (a − base)
            else:
                slots.append(len(opens))
                opens.append(v.v - a)
        plan.append((op, operands, masks, m, slots))
    order = list(pend_ids)
    zstart = len(opens)
    opens += [pend_ids[i].zshare for i in order]
    got = yield from open_values(eng, opens)
    zs = {i: got[zstart + k] for k, i in enumerate(order)}
    settled = {i: _settled(eng, pend_ids[i], zs[i]) for i in order}
    out = []
    for op, operands, masks, m, slots in plan:
        eps = []
        for v, slot in zip(operands, slots):
            if isinstance(v, Pending):
                eps.append(_floor_term(zs[id(v)], v) - got[slot])   # value − a
            else:
                eps.append(got[slot])
        fx = sum(v.frac for v in operands) if op == "mul" else 2 * operands[0].frac
        if op == "mul":
            a, b = masks
            z = m["c"].reshape(a.shape) + eps[0] * b + a * eps[1]
            if eng.lead:
                z += eps[0] * eps[1]
        else:
            (a,) = masks
            z = m["b"].reshape(a.shape) + np.uint64(2) * eps[0] * a
            if eng.lead:
                z += eps[0] * eps[0]
        out.append(AShare(z, fx, eng.lead))
    return out, settled


def settle(eng, p: Pending):
    """Open z and return the truncated value as an AShare (one round)."""
    (z,) = yield from open_values(eng, [p.zshare])
    return _settled(eng, p, z)
