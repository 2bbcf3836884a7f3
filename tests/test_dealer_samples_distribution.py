"""The dealer's private samples: Bernoulli(ε) bits, Uniform(0,1), y·v and permutations."""

import numpy as np

from chi2util import chi2_critical, chi2_stat
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.shares import AShare

N = 20000


def test_samples_have_the_right_distributions():
    def fn(eng):
        y = eng.bernoulli(0.1, (N,))
        v = eng.uniform((N,))
        triples = [eng.eps_uniform(0.3, 5) for _ in range(400)]
        perms = eng.permutation(6, count=3000)
        ys = eng.open(AShare.stack([t[0] for t in triples]))
        vs = eng.open(AShare.stack([t[1] for t in triples]))
        yvs = eng.open(AShare.stack([t[2] for t in triples]))
        return eng.open(y), eng.open(v), ys, vs, yvs, eng.open(perms), y.frac, v.frac

    y, v, ys, vs, yvs, perms, yfrac, vfrac = run_engines(fn, 3)[0]["compute.0"]
    assert yfrac == 0 and vfrac == 20
    assert set(np.unique(y)) <= {0.0, 1.0}
    assert abs(y.mean() - 0.1) < 5 * np.sqrt(0.1 * 0.9 / N)
    assert v.min() >= 0 and v.max() < 1 and abs(v.mean() - 0.5) < 5 * np.sqrt(1 / 12 / N)
    assert chi2_stat(np.histogram(v, bins=10, range=(0, 1))[0], N / 10) < chi2_critical(9)
    assert abs(ys.mean() - 0.3) < 5 * np.sqrt(0.3 * 0.7 / ys.size)
    assert vs.shape == (400, 5) and set(np.unique(ys)) <= {0.0, 1.0}
    assert np.array_equal(yvs, ys[:, None] * vs)          # y·v is exactly the product
    assert np.all(np.sort(perms, axis=1) == np.arange(1, 7))
    where_one = np.argmax(perms == 1, axis=1)              # position of 1: uniform over 6
    assert chi2_stat(np.bincount(where_one, minlength=6), perms.shape[0] / 6) < chi2_critical(5)
