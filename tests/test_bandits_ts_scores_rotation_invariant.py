"""Score-space Thompson sampling: the law of X mu, and identical draws under any rotation."""

import numpy as np
import pytest

from mpcbandit.bandits.linear import argmax_first, psd_sqrt, ts_scores


@pytest.mark.parametrize("arms", [6, 30])  # K <= d (eigh) and K > d (thin SVD)
def test_ts_scores_equal_under_orthogonal_change_of_basis(arms):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((arms, 9))
    a = rng.standard_normal((9, 9))
    v_inv = np.linalg.inv(a @ a.T + np.eye(9))
    theta = rng.standard_normal(9)
    q, _ = np.linalg.qr(rng.standard_normal((9, 9)))
    s1 = ts_scores(x, theta, v_inv, 0.3, np.random.default_rng(5))
    s2 = ts_scores(x @ q.T, q @ theta, q @ v_inv @ q.T, 0.3, np.random.default_rng(5))
    np.testing.assert_allclose(s1, s2, atol=1e-12)


@pytest.mark.parametrize("arms", [3, 7])
def test_ts_scores_have_the_law_of_x_mu(arms):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((arms, 4))
    v_inv = np.diag([1.0, 0.5, 0.25, 2.0])
    theta = np.array([0.1, -0.2, 0.3, 0.0])
    draws = np.array([ts_scores(x, theta, v_inv, 0.5, rng) for _ in range(20000)])
    np.testing.assert_allclose(draws.mean(axis=0), x @ theta, atol=0.03)
    np.testing.assert_allclose(np.cov(draws.T), 0.25 * x @ v_inv @ x.T, atol=0.05)


def test_psd_sqrt_and_tie_breaking():
    m = np.array([[4.0, 2.0], [2.0, 1.0]])  # rank one
    r = psd_sqrt(m)
    np.testing.assert_allclose(r @ r, m, atol=1e-12)
    assert argmax_first(np.array([1.0, 1.0 + 1e-13, 0.5]), 1e-9) == 0
    assert argmax_first(np.array([1.0, 1.0 + 1e-13, 0.5])) == 1
    assert argmax_first(np.array([1.0, 1.1, 0.5]), 1e-9) == 1
