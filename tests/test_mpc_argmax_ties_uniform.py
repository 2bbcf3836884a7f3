"""Argmax breaks ties uniformly at random (the dealer's shared permutation)."""

import numpy as np
import pytest

from chi2util import chi2_critical, chi2_stat
from mpcbandit.mpc.local import run_engines

TRIALS = 1500


@pytest.mark.parametrize("method", ["pairwise", "tree", "lex"])
def test_ties_are_broken_uniformly(method):
    row = np.array([2.0, 5.0, -1.0, 5.0, 5.0, 0.0])      # arms 1, 3, 4 tie for the maximum

    def fn(eng):
        x = eng.input(np.tile(row, (TRIALS, 1)) if eng.lead else None, "compute.0")
        return eng.open(eng.argmax(x, method))

    onehot = run_engines(fn, 2)[0]["compute.0"]
    assert np.all(onehot.sum(axis=1) == 1)
    counts = onehot.sum(axis=0)
    assert counts[[0, 2, 5]].sum() == 0
    tied = counts[[1, 3, 4]]
    assert chi2_stat(tied, TRIALS / 3) < chi2_critical(2)
