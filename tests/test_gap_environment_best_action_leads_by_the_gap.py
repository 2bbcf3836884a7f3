"""The synthetic environment's `gap`: the best action leads the others by at least the gap, and
gap 0 leaves leads arbitrarily close to 0 (the Shariff & Sheffet experiment's two settings)."""

import numpy as np
import pytest

from mpcbandit.bandits.gap_env import GapEnvironment


def _leads(gap: float, rounds: int = 2000) -> np.ndarray:
    env = GapEnvironment(3, 5, 10, "users", gap)
    out = []
    for _ in range(rounds):
        ctx, means = env.action_set()
        assert np.all(np.linalg.norm(ctx, axis=1) <= 1 + 1e-12)
        assert np.allclose(ctx @ env.theta, means)
        top = np.sort(means)
        out.append(top[-1] - top[-2])
    return np.array(out)


@pytest.mark.parametrize("gap", [0.0, 0.1, 0.25])
def test_best_action_leads_by_at_least_the_gap(gap):
    leads = _leads(gap)
    assert leads.min() >= gap - 1e-12
    assert leads.min() < gap + 0.02  # and the gap is the least lead, not a loose bound


def test_default_gap_is_the_dubey_pentland_environment():
    # the best mean in [0.7, 0.8]: the same draws as before the gap became a parameter
    a, b = GapEnvironment(3, 5, 10, "users"), GapEnvironment(3, 5, 10, "users", 0.1)
    for _ in range(50):
        (ca, ma), (cb, mb) = a.action_set(), b.action_set()
        assert np.array_equal(ma, mb) and np.array_equal(ca, cb)
        assert 0.7 <= ma.max() <= 0.8


def test_a_gap_that_would_push_a_mean_above_one_is_refused():
    with pytest.raises(ValueError, match="gap"):
        GapEnvironment(3, 5, 10, "users", 0.35)
