"""On an ε-exploration step the Controller learns nothing about the pulled arm: Comp draws
the position in the permuted list from its own randomness, so the Controller's best guess
through σ_t (which it drew) is right with probability 1/K, not always; secure still equals
plaintext. The Controller is played as curious: it knows its own σ_t and ε-stream, and
guesses each position; Comp's stream is fresh as in a deployment."""

import math
import os

import numpy as np
import pytest

import mpcbandit.protocols.samba.protocol as samba
import mpcbandit.protocols.samba.streams as streams
from mpcbandit.crypto.streams import KeyedStream
from chi2util import chi2_critical, chi2_stat
from tests.samba_support import samba_config

K = 5


def binomial_upper(n: int, p: float, z: float = 4.0) -> float:
    """n p + z standard deviations: exceeded by chance with probability < 1e-4."""
    return n * p + z * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("algorithm", ["epsilon-greedy", "epsilon-decreasing"])
def test_controller_guesses_explored_arms_at_chance(algorithm, monkeypatch):
    cfg = samba_config(algorithm=algorithm, budget=3000, arms=K, epsilon=0.5)
    derived = streams.protocol_seed

    def controller_knows_its_own_seeds(c, purpose):
        # the Controller's seeds as it drew them; Comp's are fresh, as in a deployment
        return os.urandom(32) if purpose == "select" else derived(c, purpose)

    monkeypatch.setattr(streams, "protocol_seed", controller_knows_its_own_seeds)
    out = samba.run_inproc_samba(cfg)
    alg = samba.make_algorithm(algorithm, **cfg.section.params)
    sigma = streams.sigma_streams(derived(cfg, "sigma"), K, alg.iterations)[0]
    explore_u = KeyedStream(derived(cfg, "epsilon"), "epsilon")
    arms = out["series"]["arms"]
    steps = [t for t in range(K + 1, cfg.section.budget + 1)
             if explore_u.row(t) <= alg.epsilon_at(t)]
    assert len(steps) > 200
    positions = np.array([sigma.row(t).index(arms[t - 1]) for t in steps])
    counts = np.bincount(positions, minlength=K)
    # every fixed guess of a position is right at chance level only
    assert counts.max() <= binomial_upper(len(steps), 1 / K), counts
    # and the position Comp drew is uniform (Comp's stream is fresh: χ² at α = 1e-6)
    assert chi2_stat(counts, len(steps) / K) < chi2_critical(K - 1), counts


def test_secure_still_equals_plaintext_with_comp_drawn_exploration():
    cfg = samba_config(algorithm="epsilon-greedy", budget=400, arms=K, epsilon=0.4)
    out = samba.run_inproc_samba(cfg)
    ref = samba.plaintext(cfg)
    assert out["series"]["arms"] == ref["series"]["arms"] and out["cumulative_reward"] == ref["cumulative_reward"]
