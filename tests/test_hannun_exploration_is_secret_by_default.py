"""By default the dealer keys the exploration stream with fresh randomness, so p' (who learns
every a_t) cannot tell exploring steps from greedy ones: playing p', guessing them from the
public config seed names the true exploring steps no better than chance. In the 'seeded'
reproduction mode the same guess is exact. Either way the run equals the float64 replay of the
key the dealer reveals in its result when the run is over."""

import math

import numpy as np

from hannun_inproc import SECRET_AGREEMENT, run_hannun
from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.protocols.hannun.reference import replay
from mpcbandit.protocols.hannun.stream import exploration
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

STEPS, EPS = 600, 0.3


def curious_puller_hits(overrides):
    """(true exploring steps, how many of them p' names from the public seed, agreement with
    the replay of the dealer's key, the key)."""
    cfg, results, _, _ = run_hannun([f"hannun.iterations={STEPS}", f"hannun.epsilon={EPS}",
                                     "hannun.arms=4", "hannun.dims=4", "seed=11", *overrides])
    key = bytes.fromhex(results["dealer.0"]["exploration_key"])
    truth = exploration(cfg, key).explore.astype(bool)
    guess = exploration(cfg, exploration_key(cfg.seed)).explore.astype(bool)
    arms = results["arm_puller.0"]["arms"]
    agreement = np.mean(np.asarray(arms) == np.asarray(replay(cfg, key)["series"]["arms"]))
    return int(truth.sum()), int((truth & guess).sum()), agreement, key


def test_the_curious_puller_names_exploring_steps_at_chance_by_default():
    explored, named, agreement, key = curious_puller_hits([])
    assert key != exploration_key(11)
    # p' names a true exploring step with probability EPS when the streams are independent:
    # within 4 standard deviations of chance, far from the seeded mode's certainty
    chance, sd = EPS * explored, math.sqrt(explored * EPS * (1 - EPS))
    assert abs(named - chance) <= 4 * sd, (named, explored)
    assert named < 0.6 * explored
    assert agreement >= SECRET_AGREEMENT


def test_in_seeded_mode_the_puller_names_every_exploring_step():
    explored, named, agreement, key = curious_puller_hits(["hannun.exploration=seeded"])
    assert key == exploration_key(11) and explored > 100
    assert named == explored
    assert agreement == 1.0
