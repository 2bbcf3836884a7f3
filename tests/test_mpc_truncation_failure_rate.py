"""Truncation failures (wrap errors) at L = 16, 20, 24 over 10^5 products vs the bound
P(fail) = |x·y|·2^(2L) / 2^64 (Hannun et al. App. C); the exact variant never fails."""

import numpy as np
import pytest

from mpcbandit.mpc.local import run_engines

N_PRODUCTS = 100_000


def products(L, seed):
    """Operands whose 2L-bit products sit near 2^56, so failures are frequent enough to count."""
    rng = np.random.default_rng(seed)
    m = 2.0 ** (28 - L)
    x = m * rng.uniform(0.5, 1.0, N_PRODUCTS) * rng.choice([-1, 1], N_PRODUCTS)
    y = m * rng.uniform(0.5, 1.0, N_PRODUCTS)
    return x, y


def failures(n, L, mode, x, y):
    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        b = eng.input(y if eng.lead else None, "compute.0")
        return eng.open(eng.mul(a, b))

    got = run_engines(fn, n, frac_bits=L, trunc=mode, deadline_s=60)[0]["compute.0"]
    return int(np.sum(np.abs(got - x * y) > 1.0))


@pytest.mark.parametrize("L", [16, 20, 24])
@pytest.mark.parametrize("n,mode", [(2, "local"), (3, "paper"), (3, "pair")])
def test_failure_rate_matches_bound(L, n, mode):
    x, y = products(L, L)
    expected = float(np.sum(np.abs(x * y)) * 2.0 ** (2 * L) / 2.0 ** 64)
    observed = failures(n, L, mode, x, y)
    print(f"L={L} {mode} n={n}: {observed} failures in {N_PRODUCTS}, bound predicts {expected:.0f}")
    assert abs(observed - expected) <= 5 * np.sqrt(expected) + 3


def test_exact_truncation_never_fails():
    x, y = products(20, 20)
    assert failures(3, 20, "exact", x, y) == 0
