"""The MPC engine: one party's handle on the computing parties, the dealer and the ops.

    eng = Engine(chan, parties=["compute.0", "compute.1"], dealer="dealer.0")
    x = eng.input(values, owner="feature_holder.0")      # any party may own an input
    z = eng.mul(x, y)                                     # synchronous: runs one op
    s, w = eng.together(eng.op.matmul(W, x), eng.op.mul(y, v))   # merged rounds
    eng.open_to(z, "arm_puller.0")                        # only that party learns z

Every method is SPMD: all parties that take part call it in the same order with the same
public arguments (non-computing parties pass None for shares they do not hold). ``eng.op.*``
builds an ``Op`` without running it; ``eng.run`` / ``eng.together`` run ops, merging their
rounds so that independent ops share exchanges. See docs/mpc-api.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpcbandit.mpc import arith, binary, compare, functions, opening, truncation
from mpcbandit.mpc.fixed import DEFAULT_FRAC_BITS, decode, encode
from mpcbandit.mpc.provider import MaterialSupply
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.rounds import Op, run_ops
from mpcbandit.mpc.shares import AShare, BShare

__all__ = ["Engine", "Ops", "TRUNC_CHOICES"]

TRUNC_CHOICES = ("auto", "local", "paper", "exact", "pair")


class Ops:
    """Op builders: each returns an Op (label + round generator) for Engine.run / together."""

    def __init__(self, eng: "Engine"):
        self.e = eng

    def input(self, value, owner: str, frac: int | None = None) -> Op:
        f = self.e.frac if frac is None else frac
        return Op("input", arith.input_value(self.e, value, owner, f))

    def open(self, x: AShare) -> Op:
        return Op("open", _decoded(opening.open_values(self.e, [x.v]), x.frac))

    def open_to(self, x: AShare | None, to: str) -> Op:
        return Op("open_to", arith.open_to(self.e, x, to))

    def mul(self, x: AShare, y: AShare, rescale: bool = True) -> Op:
        return Op("mul", arith.bilinear(self.e, "mul", x, y, rescale))

    def matmul(self, x: AShare, y: AShare, rescale: bool = True) -> Op:
        return Op("matmul", arith.bilinear(self.e, "matmul", x, y, rescale))

    def outer3(self, p: AShare, q: AShare, w: AShare) -> Op:
        return Op("outer3", arith.outer3(self.e, p, q, w))

    def square(self, x: AShare) -> Op:
        return Op("square", arith.square(self.e, x))

    def mul_public(self, x: AShare, c) -> Op:
        return Op("mul", functions.mul_public(self.e, x, c))

    def truncate(self, x: AShare, d: int, mode: str | None = None) -> Op:
        return Op("trunc", truncation.truncate(self.e, x, d, self.e._trunc_mode(mode)))

    def and_(self, x: BShare, y: BShare) -> Op:
        return Op("and", _first(binary.and_(self.e, [x], [y])))

    def a2b(self, x: AShare) -> Op:
        return Op("a2b", binary.a2b(self.e, x))

    def b2a(self, bit: BShare) -> Op:
        return Op("b2a", binary.b2a(self.e, bit))

    def msb(self, x: AShare) -> Op:
        return Op("lt", binary.msb(self.e, x))

    def lt(self, x: AShare, y) -> Op:
        return Op("lt", compare.less_than(self.e, x, y))

    def ge(self, x: AShare, y) -> Op:
        return Op("lt", _one_minus(compare.less_than(self.e, x, y)))

    def gt(self, x: AShare, y) -> Op:
        return Op("lt", _gt(self.e, x, y))

    def argmax(self, x: AShare, method: str = "auto", permutation: AShare | None = None) -> Op:
        return Op("argmax", compare.argmax(self.e, x, method, permutation))

    def exp(self, x: AShare, domain=functions.EXP_DOMAIN) -> Op:
        functions.check_domain("exp", domain, functions.EXP_DOMAIN)
        return Op("exp", functions.exp(self.e, x))

    def reciprocal(self, x: AShare, iterations: int = functions.RECIPROCAL_ITERATIONS,
                   domain=(1.0, 10.0), start: str = "exp") -> Op:
        valid = functions.RECIPROCAL_DOMAIN if start == "exp" else (1.0, 2.0)
        functions.check_domain(f"reciprocal (start {start})", domain, valid)
        return Op("reciprocal", functions.reciprocal(self.e, x, iterations, start))


def _decoded(gen, frac):
    (v,) = yield from gen
    return decode(v, frac)


def _first(gen):
    return (yield from gen)[0]


def _one_minus(gen):
    return 1 - (yield from gen)


def _gt(eng, x, y):
    if isinstance(y, AShare):
        return (yield from compare.less_than(eng, y, x))
    return (yield from compare.less_than(eng, -x, -np.asarray(y, dtype=np.float64)))


class Engine:
    """One party's MPC engine over a Channel (computing or not)."""

    def __init__(self, chan, parties: list[str], dealer: str | None = "dealer.0", *,
                 frac_bits: int = DEFAULT_FRAC_BITS, trunc: str = "auto",
                 batch_elements: int | None = None, batch_first_use: bool = True):
        if len(parties) < 2:
            raise ValueError(f"need at least 2 computing parties, got {parties}")
        if not 8 <= frac_bits <= 40:
            raise ValueError(f"frac_bits must be in 8..40, got {frac_bits}")
        self.chan = chan
        self.me: str = chan.me
        self.parties = list(parties)
        self.n = len(parties)
        self.index = self.parties.index(self.me) if self.me in self.parties else None
        self.is_computing = self.index is not None
        self.lead = self.index == 0
        self.others = [p for p in self.parties if p != self.me]
        self.dealer = dealer
        self.frac = frac_bits
        if trunc not in TRUNC_CHOICES:
            raise ValueError(f"trunc must be one of {TRUNC_CHOICES}, got {trunc!r}")
        if trunc == "local" and self.n != 2:
            raise ValueError(f"trunc='local' (SecureML) is only correct for 2 computing parties, "
                             f"not {self.n}")
        self.trunc = ("local" if self.n == 2 else "pair") if trunc == "auto" else trunc
        kw = {} if batch_elements is None else {"batch_elements": batch_elements}
        kw["batch_first_use"] = batch_first_use
        self.material = (MaterialSupply(chan, dealer, self.index, self.n, **kw)
                         if self.is_computing else None)
        self.op = Ops(self)

    def _trunc_mode(self, mode: str | None) -> str:
        return self.trunc if mode is None else mode

    # ------------------------------------------------------------ running ops

    def run(self, op: Op, label: str | None = None) -> Any:
        """Run one op to completion; its rounds are counted under its label."""
        return run_ops(self.chan, label or op.label, [op.gen])[0]

    def together(self, *ops: Op, label: str | None = None) -> tuple:
        """Run independent ops in lock-step: one exchange per step for all of them.

        Rounds are counted under label (default: the first op's label); a non-computing party
        taking part with open_to / input must use the same label."""
        return tuple(run_ops(self.chan, label or ops[0].label, [o.gen for o in ops]))

    # ------------------------------------------------------------ local (0 rounds)

    def public(self, value, frac: int | None = None) -> AShare:
        """A public constant as a share (the lead party holds it)."""
        f = self.frac if frac is None else frac
        v = encode(value, f)
        return AShare(v if self.lead else np.zeros_like(v), f, self.lead)

    def zeros(self, shape, frac: int | None = None) -> AShare:
        return AShare(np.zeros(shape, dtype=U64), self.frac if frac is None else frac, self.lead)

    # ------------------------------------------------------------ dealer samples (0 rounds)

    def bernoulli(self, eps: float, shape=()) -> AShare:
        """Shares of Bernoulli(eps) bits (0 fractional bits) drawn by the dealer."""
        size = int(np.prod(shape, dtype=np.int64))
        return AShare(self.material.take("bern", (float(eps),), size)["y"].reshape(shape), 0, self.lead)

    def uniform(self, shape=()) -> AShare:
        """Shares of Uniform[0, 1) values (frac fractional bits) drawn by the dealer."""
        size = int(np.prod(shape, dtype=np.int64))
        return AShare(self.material.take("unif", (self.frac,), size)["v"].reshape(shape), self.frac, self.lead)

    def eps_uniform(self, eps: float, length: int) -> tuple[AShare, AShare, AShare]:
        """(y, v, y·v): y ~ Bernoulli(eps) (scalar, integer), v ~ Uniform(0,1)^length, and
        their product, all from the dealer (Alg. 1 lines 8, 12, 13: no multiplication online)."""
        m = self.material.take("yv", (float(eps), self.frac, int(length)), 1)
        return (AShare(m["y"][0], 0, self.lead), AShare(m["v"][0], self.frac, self.lead),
                AShare(m["yv"][0], self.frac, self.lead))

    def permutation(self, size: int, count: int | None = None) -> AShare:
        """Shares of a random permutation of 1..size (integers); count of them if given."""
        g = self.material.take("perm", (int(size),), count or 1)["g"]
        return AShare(g if count else g[0], 0, self.lead)

    # ------------------------------------------------------------ synchronous ops

    def input(self, value, owner: str, frac: int | None = None) -> AShare | None:
        """Owner's value secret-shared among the computing parties (None elsewhere). 1 round."""
        return self.run(self.op.input(value, owner, frac))

    def open(self, x: AShare) -> np.ndarray:
        """The value of x, revealed to every computing party (decoded floats). 1 round."""
        return self.run(self.op.open(x))

    def open_to(self, x: AShare | None, to: str) -> np.ndarray | None:
        """The value of x revealed to party `to` only (decoded floats there, None elsewhere)."""
        return self.run(self.op.open_to(x, to))

    def mul(self, x: AShare, y: AShare, rescale: bool = True) -> AShare:
        """Elementwise product (broadcasting). 1 round + truncation; rescale=False: the exact
        product at x.frac + y.frac bits, no truncation."""
        return self.run(self.op.mul(x, y, rescale))

    def matmul(self, x: AShare, y: AShare, rescale: bool = True) -> AShare:
        """x @ y with numpy semantics (dot, matvec, matmul, batched). 1 round + truncation;
        rescale=False: the exact product at x.frac + y.frac bits, no truncation."""
        return self.run(self.op.matmul(x, y, rescale))

    def dot(self, x: AShare, y: AShare) -> AShare:
        """Inner product over the last axis of 1-D shares."""
        return self.run(self.op.matmul(x, y))

    def outer3(self, p: AShare, q: AShare, w: AShare) -> AShare:
        """z[i, j, k] = p_i q_j w_k of three vectors: 1 round, exact at the sum of their
        fractional bits (no truncation)."""
        return self.run(self.op.outer3(p, q, w))

    def square(self, x: AShare) -> AShare:
        return self.run(self.op.square(x))

    def mul_public(self, x: AShare, c) -> AShare:
        """x times a public real c (needs truncation)."""
        return self.run(self.op.mul_public(x, c))

    def truncate(self, x: AShare, d: int, mode: str | None = None) -> AShare:
        return self.run(self.op.truncate(x, d, mode))

    def and_(self, x: BShare, y: BShare) -> BShare:
        return self.run(self.op.and_(x, y))

    def a2b(self, x: AShare) -> BShare:
        return self.run(self.op.a2b(x))

    def b2a(self, bit: BShare) -> AShare:
        return self.run(self.op.b2a(bit))

    def open_binary(self, x: BShare) -> np.ndarray:
        """The XOR of every party's words (1 round)."""
        return run_ops(self.chan, "open", [opening.open_values(self, [x.v], binary=True)])[0][0]

    def lt(self, x: AShare, y) -> AShare:
        """⟦x < y⟧ as 0/1 integers (y a share or public). 7 rounds."""
        return self.run(self.op.lt(x, y))

    def ge(self, x: AShare, y) -> AShare:
        return self.run(self.op.ge(x, y))

    def gt(self, x: AShare, y) -> AShare:
        return self.run(self.op.gt(x, y))

    def argmax(self, x: AShare, method: str = "auto", permutation: AShare | None = None) -> AShare:
        """Shared one-hot of the maximum over the last axis, ties broken uniformly (by the
        dealer's permutation, or by shares of the caller's)."""
        return self.run(self.op.argmax(x, method, permutation))

    def exp(self, x: AShare, domain=functions.EXP_DOMAIN) -> AShare:
        return self.run(self.op.exp(x, domain))

    def reciprocal(self, x: AShare, iterations: int = functions.RECIPROCAL_ITERATIONS,
                   domain=(1.0, 10.0), start: str = "exp") -> AShare:
        """⟦1/x⟧ by Newton–Raphson from the paper's exp start, or (start="linear", for x in
        [1, 2]) from the minimax line: 8 rounds fewer."""
        return self.run(self.op.reciprocal(x, iterations, domain, start))

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Tell the dealer this party is done (computing parties only)."""
        if self.material is not None:
            self.material.close()

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
