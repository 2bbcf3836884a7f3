"""The packed carry circuit and the public-vs-binary comparison behind MSB and exact truncation."""

import numpy as np

from mpcbandit.mpc import binary
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.shares import BShare

U = np.uint64


def run_plain(gen):
    """Drive a circuit generator with ANDs evaluated in the clear."""
    try:
        next(gen)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("plaintext circuit should not communicate")


def test_carry62_matches_integer_addition(monkeypatch):
    def and_plain(eng, xs, ys):
        return [BShare(x.v & y.v, True) for x, y in zip(xs, ys)]
        yield  # pragma: no cover

    monkeypatch.setattr(binary, "and_", and_plain)
    rng = np.random.default_rng(3)
    for n in (1, 15, 16, 17, 100):
        z = rng.integers(0, 2 ** 64, n, dtype=U)
        r = rng.integers(0, 2 ** 64, n, dtype=U)
        z[:1], r[:1] = U(2 ** 63 - 1), U(1)                      # carry ripples through all bits
        g62, p62, g30 = run_plain(binary._carry62(type("E", (), {"lead": True})(), z & r, z ^ r))
        low = U(2 ** 63 - 1)
        carry63 = (((z & low) + (r & low)) >> U(63)) & U(1)
        assert np.array_equal(g62 ^ (p62 & g30), carry63)


def test_less_than_public_is_exact_at_the_edges():
    rng = np.random.default_rng(4)
    r = rng.integers(0, 2 ** 64, 200, dtype=U)
    r[:6] = [0, 1, 2 ** 63, 2 ** 63 - 1, 2 ** 64 - 1, 12345]
    z = r.copy()
    z[::4] += U(1)
    z[1::4] -= U(1)
    z[2::4] ^= U(2 ** 63)

    def fn(eng):
        # r beyond the fixed-point range: share it in binary directly (lead holds it, XOR 0)
        rb = BShare(r.copy() if eng.lead else np.zeros_like(r), eng.lead)
        return eng.open(eng.b2a(rb.bit(0))), eng.open(eng.run(_op(eng, z, rb.v)))

    def _op(eng, z, rbv):
        from mpcbandit.mpc.rounds import Op
        return Op("lt", binary.less_than_public(eng, z, rbv))

    for n in (2, 3):
        bit0, eta = run_engines(fn, n)[0]["compute.0"]
        assert np.array_equal(bit0, (r & U(1)).astype(float))
        assert np.array_equal(eta, (z < r).astype(float))
