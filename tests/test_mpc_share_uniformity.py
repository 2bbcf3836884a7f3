"""Shares of one constant look uniform on their top bits; a biased generator does not."""

import numpy as np
import pytest

from chi2util import chi2_critical, top_bits_uniform
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.ring import share


def test_wilson_hilferty_matches_table():
    assert abs(chi2_critical(15, z=3.09) - 37.70) < 0.3   # table value, α = 0.001
    assert abs(chi2_critical(2, z=3.09) - 13.82) < 0.6
    assert abs(chi2_critical(15) - 56.49) < 1.0           # table value, α = 1e-6 (the default)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_every_partys_shares_of_a_constant_are_uniform(n):
    def fn(eng):
        x = eng.input(np.full(20000, 3.25) if eng.lead else None, "compute.0")
        t = eng.material.take("mul", (), 20000)
        return x.v, t["c"]

    res, _ = run_engines(fn, n)
    for p in range(n):
        shares, triple_c = res[f"compute.{p}"]
        assert top_bits_uniform(shares), p
        assert top_bits_uniform(triple_c), p


def test_biased_generator_fails_the_same_test():
    x = np.full(20000, 12345, dtype=np.uint64)
    good = share(x, 2, Prg())
    assert top_bits_uniform(good[0]) and top_bits_uniform(good[1])
    rng = np.random.default_rng(0)
    biased = rng.integers(0, 2 ** 62, x.size, dtype=np.uint64)   # top two bits never set
    assert not top_bits_uniform(biased)
    assert not top_bits_uniform(x - biased)                      # nor the other share
