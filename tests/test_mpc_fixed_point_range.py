"""Fixed-point encoding round-trips and refuses values it cannot represent."""

import numpy as np
import pytest

from mpcbandit.mpc.fixed import FixedPointRangeError, decode, encode, max_abs


@pytest.mark.parametrize("L", [8, 16, 20, 24, 40])
def test_round_trip_within_half_an_ulp(L):
    x = np.random.default_rng(L).uniform(-1, 1, 1000) * max_abs(L) / 2
    assert np.all(np.abs(decode(encode(x, L), L) - x) <= 2.0 ** -(L + 1) * (1 + 1e-9) + np.abs(x) * 1e-15)


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan, 2.0 ** 42, -(2.0 ** 42)])
def test_out_of_range_is_refused(bad):
    with pytest.raises(FixedPointRangeError, match="outside the fixed-point range|is outside"):
        encode([0.0, bad], 20)


def test_negative_values_are_twos_complement():
    assert encode(-1.0, 20).view(np.int64) == -(2 ** 20)
