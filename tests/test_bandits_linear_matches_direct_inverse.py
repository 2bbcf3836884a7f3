import numpy as np

from mpcbandit.bandits.linear import LinearBandit, sherman_morrison, ucb_scores


def test_sherman_morrison_equals_direct_inverse():
    rng = np.random.default_rng(0)
    v = np.eye(6) * 2.0
    v_inv = np.linalg.inv(v)
    for _ in range(50):
        x = rng.standard_normal(6)
        v += np.outer(x, x)
        v_inv = sherman_morrison(v_inv, x)
    np.testing.assert_allclose(v_inv, np.linalg.inv(v), rtol=1e-9, atol=1e-12)


def test_linear_bandit_learns_theta_and_ucb_prefers_best_arm():
    rng = np.random.default_rng(1)
    theta = np.array([1.0, -0.5, 0.25])
    bandit = LinearBandit(3, lam=1.0)
    for _ in range(400):
        x = rng.standard_normal(3)
        bandit.update(x, x @ theta + 0.01 * rng.standard_normal())
    np.testing.assert_allclose(bandit.theta, theta, atol=0.01)
    arms = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0]])
    assert bandit.choose_ucb(arms, beta=0.1) == 0
    widths = ucb_scores(arms, np.zeros(3), bandit.v_inv, 1.0)
    assert np.all(widths > 0)
