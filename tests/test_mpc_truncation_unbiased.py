"""Every truncation is centred: the mean error over many products is far below one ulp.

Local, paper and pair truncation are probabilistic: they wrap, by design, with probability about
|x| / 2^64 per element (here ~5e-7: about one run in a hundred meets one), moving the value by
exactly 2^(64 - L) ulps. Those are allowed, rarely and only of that size; exact truncation
never wraps."""

import numpy as np
import pytest

from mpcbandit.mpc.fixed import decode, encode
from mpcbandit.mpc.local import run_engines

L = 20


@pytest.mark.parametrize("n,mode", [(2, "local"), (3, "paper"), (3, "pair"), (2, "exact"),
                                    (5, "paper"), (5, "pair")])
def test_mean_truncation_error_is_small(n, mode):
    rng = np.random.default_rng(7)
    x = decode(encode(rng.uniform(-3, 3, 20000), L), L)
    y = decode(encode(rng.uniform(-3, 3, 20000), L), L)

    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        b = eng.input(y if eng.lead else None, "compute.0")
        return eng.open(eng.mul(a, b))

    err = (run_engines(fn, n, trunc=mode)[0]["compute.0"] - x * y) * 2 ** L   # in ulps
    wrapped = np.abs(err) > n
    assert wrapped.sum() <= (0 if mode == "exact" else 2)
    assert np.allclose(np.abs(err[wrapped]), 2.0 ** (64 - L), rtol=1e-9)
    assert np.abs(err[~wrapped]).max() <= n               # at most n ulps off
    assert abs(err[~wrapped].mean()) < 0.1                # centred (a floor would give ~n/2)
