"""The float64 replay of a serve log (mpcbandit/protocols/hannun/serve_reference.py) and the
public Newton–Schulz schedule the secure refresh runs too."""

import numpy as np
import pytest

from mpcbandit.bandits.egreedy import draw_exploration, run_eps_greedy
from mpcbandit.errors import DataError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.hannun.serve_reference import (
    MAX_REWARDS,
    SCALE_BITS,
    ServeReference,
    newton_schulz,
    newton_schulz_schedule,
    replay_log,
)

L = 20
KEY = bytes(range(64, 96))


def _unit(rng, n, d):
    x = rng.normal(0, 1, (n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("rewards", [1, 2, 16, 64, MAX_REWARDS])
def test_scaled_newton_schulz_reaches_the_inverse_from_the_running_one_where_the_plain_step_cannot(
        rewards):
    rng = np.random.default_rng(rewards)
    D = 6
    # the worst batch: a fresh arm (its running inverse I) and `rewards` copies of one unit
    # context, so W X has the eigenvalue 1 + R; and a seasoned arm given random unit contexts
    x = _unit(rng, 1, D)[0]
    fresh = np.eye(D) + rewards * np.outer(x, x)
    old = np.eye(D) + _unit(rng, 40, D).T @ _unit(rng, 40, D)
    old = (old + old.T) / 2 + 20 * np.eye(D)
    seasoned = old + (lambda u: u.T @ u)(_unit(rng, rewards, D))
    steps = newton_schulz_schedule(rewards, L)
    for w, start in ((fresh, np.eye(D)), (seasoned, np.linalg.inv(old))):
        got = newton_schulz(w, start, steps)
        assert np.abs(got - np.linalg.inv(w)).max() <= 2.0 ** -(L + 2)
    # every constant is a multiple of 2^-SCALE_BITS; the last step is plain Newton–Schulz
    assert all(c * 2 ** SCALE_BITS == round(c * 2 ** SCALE_BITS) for step in steps for c in step)
    assert steps[-1] == (2.0, 1.0)
    # the plain step from the running inverse (reinvert's) needs ||I - W X|| < 1: here the
    # spectrum of W X reaches 1 + R >= 2, where it never converges, however many steps
    with np.errstate(over="ignore", invalid="ignore"):
        plain = newton_schulz(fresh, np.eye(D), [(2.0, 1.0)] * 30)
    assert not np.abs(plain - np.linalg.inv(fresh)).max() < 0.1


def test_every_batch_size_up_to_max_rewards_has_a_schedule_that_reaches_the_inverse():
    # with c2 always rounded to the nearest multiple of 2^-18, its rounding sank the image's
    # low end below 0 for 39 sizes (149, 156, 158, ... 254): no schedule, and the holders of
    # a service with serve.max_batch above 148 failed on their first large update batch; 7
    # more (132, 137, ...) took 9 or 10 steps, past the 8 of K(256)
    rng = np.random.default_rng(4)
    D = 6
    x = _unit(rng, 1, D)[0]
    for rewards in range(1, MAX_REWARDS + 1):
        steps = newton_schulz_schedule(rewards, L)
        fresh = np.eye(D) + rewards * np.outer(x, x)   # W X's eigenvalue at 1 + R
        got = newton_schulz(fresh, np.eye(D), steps)
        assert np.abs(got - np.linalg.inv(fresh)).max() <= 2.0 ** -(L + 2), rewards
        assert len(steps) <= 8 and steps[-1] == (2.0, 1.0), rewards


def test_a_batch_of_more_than_max_rewards_is_applied_as_consecutive_refreshes():
    rng = np.random.default_rng(2)
    A, D, R = 3, 5, MAX_REWARDS + 44
    x, arms, r = _unit(rng, R, D), rng.integers(0, A, R), rng.integers(0, 2, R).astype(float)
    whole, parts = ServeReference(A, D, 0.1, L, KEY), ServeReference(A, D, 0.1, L, KEY)
    whole.update(x, arms, r)
    parts.update(x[:MAX_REWARDS], arms[:MAX_REWARDS], r[:MAX_REWARDS])
    parts.update(x[MAX_REWARDS:], arms[MAX_REWARDS:], r[MAX_REWARDS:])
    assert np.array_equal(whole.w_inv, parts.w_inv) and np.array_equal(whole.b, parts.b)
    with pytest.raises(ValueError, match=f"1..{MAX_REWARDS}"):
        newton_schulz_schedule(R, L)


def test_serving_each_decision_then_its_reward_picks_the_eps_greedy_runs_arms():
    rng = np.random.default_rng(3)
    T, A, D, eps = 400, 5, 8, 0.2
    contexts = _unit(rng, T, D) * rng.uniform(0.3, 1.0, (T, 1))
    rewards = (rng.random((T, A)) < 1 / (1 + np.exp(-4 * contexts @ rng.normal(0, 1, (D, A))))
               ).astype(float)
    ref = ServeReference(A, D, eps, L, KEY)
    log = []
    for t in range(T):          # the world answers each decision before the next one
        ids = [f"t{t}"]
        log.append(("decide", ids, contexts[t:t + 1]))
        arm = ref.decide(contexts[t:t + 1])[0]
        log.append(("reward", ids, rewards[t, arm:arm + 1]))
        ref.update(contexts[t:t + 1], np.array([arm]), rewards[t, arm:arm + 1])
    # Alg. 1 with Sherman–Morrison, on the same exploration stream
    want = run_eps_greedy(contexts, rewards, draw_exploration(Prg(KEY), T, A, eps, L)).arms
    got = replay_log(log, ServeReference(A, D, eps, L, KEY))
    assert [got[f"t{t}"] for t in range(T)] == want.tolist()


@pytest.mark.parametrize("reward_ids,named", [(["d0", "d9"], "'d9', never decided"),
                                               (["d1", "d1"], "'d1', rewarded before")])
def test_the_replay_refuses_a_reward_for_an_id_never_decided_or_already_rewarded(reward_ids, named):
    x = _unit(np.random.default_rng(4), 2, 3)
    log = [("decide", ["d0", "d1"], x), ("reward", reward_ids, [1.0, 0.0])]
    with pytest.raises(DataError, match=f"batch 1: a reward for id {named}"):
        replay_log(log, ServeReference(2, 3, 0.1, L, KEY))
