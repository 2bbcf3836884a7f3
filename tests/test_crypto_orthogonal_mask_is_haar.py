"""The O3M mask: orthogonal, never the identity, Haar (sign-fixed QR), from the AES PRG."""

import numpy as np
import pytest

from mpcbandit.crypto.orthogonal_mask import column_blocks, haar_orthogonal, prg_normal
from mpcbandit.mpc.prg import Prg


def test_prg_normal_is_standard_normal_and_reproducible_from_the_seed():
    z = prg_normal(Prg(b"\1" * 32), 200_001)
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    assert abs(np.mean(np.abs(z) > 1.96) - 0.05) < 0.003
    np.testing.assert_array_equal(prg_normal(Prg(b"\2" * 32), (3, 4)), prg_normal(Prg(b"\2" * 32), (3, 4)))


def test_mask_is_orthogonal_and_splits_by_columns():
    q = haar_orthogonal(50, Prg())
    np.testing.assert_allclose(q @ q.T, np.eye(50), atol=1e-12)
    blocks = column_blocks(q, [10, 30, 10])
    assert [b.shape for b in blocks] == [(50, 10), (50, 30), (50, 10)]
    np.testing.assert_array_equal(np.hstack(blocks), q)
    with pytest.raises(ValueError):
        column_blocks(q, [10, 10])
    with pytest.raises(ValueError):
        haar_orthogonal(1, Prg())


def test_haar_entries_are_symmetric_and_trace_has_mean_zero_variance_one():
    # Haar on O(d): E tr Q = 0, Var tr Q = 1; numpy QR without the sign fix: mean -1.6, var 0.54 (d=8)
    prg = Prg(b"\3" * 32)
    traces = np.array([np.trace(haar_orthogonal(8, prg)) for _ in range(3000)])
    assert abs(traces.mean()) < 0.1 and abs(traces.var() - 1) < 0.15
