import numpy as np

from mpcbandit.bandits.egreedy import (draw_exploration, exploration_key, run_eps_greedy,
                                       tie_break_argmax)
from mpcbandit.data.tasks import make_task
from mpcbandit.mpc.prg import Prg


def test_exploration_stream_is_chunk_invariant_and_well_formed():
    key = exploration_key(7)
    whole = draw_exploration(Prg(key), 40, 5, 0.3, 20)
    prg = Prg(key)
    parts = [draw_exploration(prg, n, 5, 0.3, 20) for n in (1, 9, 30)]
    np.testing.assert_array_equal(np.concatenate([p.explore for p in parts]), whole.explore)
    np.testing.assert_array_equal(np.concatenate([p.uniform for p in parts]), whole.uniform)
    np.testing.assert_array_equal(np.concatenate([p.perm for p in parts]), whole.perm)
    assert np.all(np.sort(whole.perm, axis=1) == np.arange(1, 6))
    assert whole.uniform.min() >= 0 and whole.uniform.max() < 2**20
    big = draw_exploration(Prg(key), 20000, 2, 0.3, 20)
    assert abs(big.explore.mean() - 0.3) < 0.02


def test_tie_break_picks_largest_permutation_entry_among_maxima():
    scores = np.array([[0.0, 1.0, 1.0, 0.5], [0.0, 0.0, 0.0, 0.0]])
    perm = np.array([[4, 1, 2, 3], [2, 3, 1, 4]])
    np.testing.assert_array_equal(tie_break_argmax(scores, perm), [2, 3])


def _naive(contexts, rewards, samples):
    """Algorithm 1 written line by line: explicit W_a, inverse, w_a, every arm updated."""
    t_steps, d = contexts.shape
    arms = rewards.shape[1]
    w = [np.eye(d) for _ in range(arms)]
    b = [np.zeros(d) for _ in range(arms)]
    out = []
    for t in range(t_steps):
        x = contexts[t]
        s = np.array([np.linalg.solve(w[a], b[a]) @ x for a in range(arms)])
        dp = samples.v()[t] if samples.explore[t] else s
        best = np.flatnonzero(np.isclose(dp, dp.max(), rtol=0, atol=1e-9))
        a_t = best[np.argmax(samples.perm[t][best])]
        out.append(a_t)
        o = np.eye(arms)[a_t]
        for a in range(arms):
            w[a] = w[a] + o[a] * np.outer(x, x)
            b[a] = b[a] + o[a] * rewards[t, a_t] * x
    return np.array(out)


def test_reference_equals_naive_algorithm_1():
    data = make_task("synthetic", iterations=300, dims=5, arms=4, seed=2)
    samples = draw_exploration(Prg(exploration_key(2)), 300, 4, 0.2, 20)
    res = run_eps_greedy(data.contexts, data.rewards, samples)
    np.testing.assert_array_equal(res.arms, _naive(data.contexts, data.rewards, samples))
    np.testing.assert_array_equal(res.rewards, data.rewards[np.arange(300), res.arms])
    assert res.rewards.mean() > 0.5  # it learns: 4 arms, chance is 0.25


def test_epsilon_one_follows_the_uniform_samples_and_reinversion_changes_nothing_exact():
    data = make_task("synthetic", iterations=200, dims=4, arms=3, seed=5)
    samples = draw_exploration(Prg(exploration_key(5)), 200, 3, 1.0, 20)
    res = run_eps_greedy(data.contexts, data.rewards, samples)
    np.testing.assert_array_equal(res.arms, tie_break_argmax(samples.v(), samples.perm))
    samples = draw_exploration(Prg(exploration_key(5)), 200, 3, 0.1, 20)
    plain = run_eps_greedy(data.contexts, data.rewards, samples)
    again = run_eps_greedy(data.contexts, data.rewards, samples, reinvert_every=10)
    np.testing.assert_array_equal(plain.arms, again.arms)
    np.testing.assert_allclose(plain.w_inv, again.w_inv, atol=1e-10)
