"""Shared by the DP linear bandit tests: configs built in code, the pooled LinUCB reference."""

from __future__ import annotations

import numpy as np

from deadlines import deadline
from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.linear import LinearBandit, logdet, oful_beta
from mpcbandit.config import parse_config


def config(protocol: str, seed: int = 3, **section):
    """A validated Config of protocol with [protocol] = section."""
    return parse_config({"protocol": protocol, "seed": seed, "run": {"deadline_s": deadline(20)},
                         protocol: section})


def pooled_linucb_arms(seed: int, agents: int, dims: int, actions: int, horizon: int,
                       stream=lambda i: f"agent{i}", lam: float = 1.0) -> np.ndarray:
    """Ridge LinUCB (the shared core) on the pooled data of all agents, updated every round."""
    envs = [GapEnvironment(seed, dims, actions, stream(i)) for i in range(agents)]
    bandit = LinearBandit(dims, lam=agents * lam)
    reg = agents * lam
    arms = np.zeros((horizon, agents), dtype=np.int64)
    for t in range(horizon):
        beta = oful_beta(-logdet(bandit.v_inv), dims, reg, reg, 0.0)
        picks = []
        for i, env in enumerate(envs):
            ctx, means = env.action_set()
            a = bandit.choose_ucb(ctx, beta)
            picks.append((ctx[a], env.reward(means[a])))
            arms[t, i] = a
        for x, y in picks:
            bandit.update(x, y)
    return arms
