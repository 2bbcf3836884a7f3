"""x·⌊y/2^d⌋ with y's exact truncation in the product's round (mpc/truncated_product.py)."""

import numpy as np
import pytest

from mpcbandit.mpc import arith
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.opening import open_values
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.truncated_product import mul_truncated
from mpcbandit.mpc.truncation import truncate

L = 20


def _run(n, trunc, xv, yv, body):
    """body(eng, x at L bits, y at 2L bits) on shares; its opened results from compute.0."""
    def fn(eng):
        x = eng.run(Op("in", arith.input_value(eng, xv if eng.lead else None, "compute.0", L)))
        y = eng.run(Op("in", arith.input_value(eng, yv if eng.lead else None, "compute.0",
                                               2 * L)))
        before = eng.chan.stats.op("product").rounds
        out = eng.run(Op("product", body(eng, x, y)))
        opened = eng.run(Op("open", open_values(eng, [z.v for z in out])))
        return opened, eng.chan.stats.op("product").rounds - before
    return run_engines(fn, n, trunc=trunc)[0]["compute.0"]


def _fused_and_separate(eng, x, y):
    fused = yield from mul_truncated(eng, x, y, L)
    apart = yield from arith.bilinear(eng, "mul", x, (yield from truncate(eng, y, L)),
                                      rescale=False)
    return [fused, apart]


@pytest.mark.parametrize("x_shape", [(6, 50), (50,)], ids=["same shape", "x broadcast"])
def test_the_fused_product_equals_the_product_with_the_exact_truncation_bit_for_bit(x_shape):
    rng = np.random.default_rng(7)
    yv = rng.uniform(-2.0 ** 21, 2.0 ** 21, (6, 50))  # |y| up to 2^61 encoded: shares wrap
    yv[0, :4] = [0.0, -2.0 ** -40, 2.0 ** 21 - 1, -(2.0 ** 21) + 1]
    xv = rng.uniform(-1, 1, x_shape)
    (fused, apart), _ = _run(2, "exact", xv, yv, _fused_and_separate)
    assert np.array_equal(fused, apart)
    value = fused.view(np.int64).astype(np.float64) / 2.0 ** (2 * L)
    x_fixed, y_fixed = np.round(xv * 2 ** L) / 2 ** L, np.round(yv * 2 ** L) / 2 ** L
    assert np.abs(value - x_fixed * y_fixed).max() <= 2.0 ** -L


def test_the_fused_product_costs_one_round_where_truncating_first_costs_two():
    xv, yv = np.linspace(-1, 1, 40), np.linspace(-3, 3, 40)

    def fused(eng, x, y):
        return [(yield from mul_truncated(eng, x, y, L))]

    def apart(eng, x, y):
        yt = yield from truncate(eng, y, L)
        return [(yield from arith.bilinear(eng, "mul", x, yt, rescale=False))]

    assert _run(2, "exact", xv, yv, fused)[1] == 1
    assert _run(2, "exact", xv, yv, apart)[1] == 2


@pytest.mark.parametrize("n, trunc", [(2, "local"), (3, "exact"), (3, "pair")])
def test_other_engines_truncate_first_with_the_same_value(n, trunc):
    xv, yv = np.linspace(-1, 1, 40), np.linspace(-3, 3, 40)

    def fused(eng, x, y):
        return [(yield from mul_truncated(eng, x, y, L))]

    (z,), _ = _run(n, trunc, xv, yv, fused)
    value = z.view(np.int64).astype(np.float64) / 2.0 ** (2 * L)
    assert np.abs(value - xv * yv).max() <= n * 2.0 ** -L
