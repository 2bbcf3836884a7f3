"""Truncation failures (wrap errors) at L = 16, 20, 24 over 10^5 products vs the bound
P(fail) = |x·y|·2^(2L) / 2^64 (Hannun et al. App. C); the exact variant never fails."""

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.mpc.fixed import decode, encode
from mpcbandit.mpc.local import run_engines

N_PRODUCTS = 100_000


def products(L, seed):
    """Operands whose 2L-bit products sit near 2^56, so failures are frequent enough to count."""
    rng = np.random.default_rng(seed)
    m = 2.0 ** (28 - L)
    x = m * rng.uniform(0.5, 1.0, N_PRODUCTS) * rng.choice([-1, 1], N_PRODUCTS)
    y = m * rng.uniform(0.5, 1.0, N_PRODUCTS)
    return x, y


def errors(n, L, mode, x, y):
    """The opened products minus the true products of the encoded operands."""
    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        b = eng.input(y if eng.lead else None, "compute.0")
        return eng.open(eng.mul(a, b))

    got = run_engines(fn, n, frac_bits=L, trunc=mode, deadline_s=deadline(60))[0]["compute.0"]
    return got - decode(encode(x, L), L) * decode(encode(y, L), L)


def failures(n, L, mode, x, y):
    return int(np.sum(np.abs(errors(n, L, mode, x, y)) > 1.0))


@pytest.mark.parametrize("L", [16, 20, 24])
@pytest.mark.parametrize("n,mode", [(2, "local"), (3, "paper"), (3, "pair")])
def test_failure_rate_matches_bound(L, n, mode):
    x, y = products(L, L)
    expected = float(np.sum(np.abs(x * y)) * 2.0 ** (2 * L) / 2.0 ** 64)
    observed = failures(n, L, mode, x, y)
    print(f"L={L} {mode} n={n}: {observed} failures in {N_PRODUCTS}, bound predicts {expected:.0f}")
    assert abs(observed - expected) <= 5 * np.sqrt(expected) + 3


@pytest.mark.parametrize("n", [2, 3])
def test_exact_truncation_never_fails(n):
    x, y = products(20, 20)   # local truncation wraps hundreds of these (the test above)
    assert failures(n, 20, "exact", x, y) == 0


def test_two_party_exact_truncation_is_exact_across_the_whole_range():
    """Encoded products up to ±2^61 (a local truncation wraps ~1 in 30): every result is
    the floor of the true quotient, give or take the unbiasing ulp."""
    rng = np.random.default_rng(3)
    L = 20
    x = 2.0 ** (30.5 - L) * rng.uniform(-1, 1, N_PRODUCTS)
    y = 2.0 ** (30.5 - L) * rng.uniform(0, 1, N_PRODUCTS)
    assert failures(2, L, "local", x, y) > 1000
    assert np.abs(errors(2, L, "exact", x, y)).max() <= 2 * 2.0 ** -L

