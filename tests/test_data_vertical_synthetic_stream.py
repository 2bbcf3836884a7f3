"""The synthetic stream is §5.1's: unit contexts split by columns, unit theta*, noisy rewards."""

import numpy as np
import pytest

from mpcbandit.data.vertical_synthetic import SyntheticEnvironment, SyntheticParticipant


def test_participant_blocks_are_the_environment_columns_of_unit_contexts():
    partition = [3, 10, 7]
    env = SyntheticEnvironment(7, partition, arms=4)
    for t in (0, 255, 256, 1000):
        x = env.contexts(t)
        np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, rtol=1e-12)
        for j, (a, b) in enumerate([(0, 3), (3, 13), (13, 20)]):
            np.testing.assert_array_equal(SyntheticParticipant(7, partition, 4, j).features(t), x[:, a:b])
    assert np.linalg.norm(env.theta) == np.float64(1.0) or abs(np.linalg.norm(env.theta) - 1) < 1e-12


@pytest.mark.parametrize("reading, variance", [("std", 0.05 ** 2), ("variance", 0.05)])
def test_contexts_are_uniform_directions_and_noise_reads_the_paper_as_asked(reading, variance):
    env = SyntheticEnvironment(3, [5, 15], arms=50, noise=reading)
    x = np.concatenate([env.contexts(t) for t in range(200)])  # 10,000 unit vectors in R^20
    assert np.abs(x.mean(axis=0)).max() < 0.03
    np.testing.assert_allclose((x ** 2).mean(axis=0), 1 / 20, rtol=0.15)  # isotropic
    share = (x[:, :5] ** 2).sum(axis=1)
    assert abs(share.mean() - 5 / 20) < 0.01  # block share of the norm: Beta(5/2, 15/2) mean
    noise = np.array([env.feedback(t, 0)[0] - env.contexts(t)[0] @ env.theta for t in range(2000)])
    assert abs(noise.var() / variance - 1) < 0.15  # 2000 draws: the estimate is within ~11 %
    reward, regret = env.feedback(9, 2)
    means = env.contexts(9) @ env.theta
    assert regret == means.max() - means[2] >= 0
