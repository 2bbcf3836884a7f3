"""JDP-LinUCB (Shariff & Sheffet 2018, Alg. 1) in one process, for the figure sweeps.

LinUCB whose statistics are the tree mechanism's noisy prefix sums: V_t = G_{t-1} + H_t and
u_t = X^T y + h_t, beta_t of Prop. 4 with the (rho_min, rho_max, gamma) of the noise. Protocol
`jdp` runs the same steps with the learner, the privatizer and the user stream as three
processes (same streams, same noise purpose), so a seeded run of both gives the same arms.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.linear import logdet, oful_beta, ucb_arms
from mpcbandit.dp.accounting import PrivacyParams
from mpcbandit.dp.noise import NormalSource
from mpcbandit.dp.privatizer import Privatizer, augmented_gram

__all__ = ["jdp_arm", "simulate_jdp", "JDP_STREAM"]

JDP_STREAM = "users"


def jdp_arm(gram: np.ndarray, vec: np.ndarray, contexts: np.ndarray, params: PrivacyParams, *,
            sigma: float = 0.5, alpha: float = 0.1) -> tuple[int, float]:
    """The learner's arm from the released (V_t, u_t) and beta_t of Prop. 4 it used."""
    beta = float(oful_beta(logdet(gram), params.dims, params.rho_min, params.rho_max, params.gamma,
                           sigma=sigma, alpha=alpha))
    return int(ucb_arms(gram[None], vec[None], contexts[None], beta)[0]), beta


def simulate_jdp(*, dims: int, actions: int, horizon: int, params: PrivacyParams, seed: int,
                 source: NormalSource, sigma: float = 0.5, alpha: float = 0.1,
                 gap: float = 0.1) -> dict:
    """Run JDP-LinUCB for horizon rounds; arms, rewards and per-round pseudo-regret."""
    env = GapEnvironment(seed, dims, actions, JDP_STREAM, gap)
    priv = Privatizer(params, source)
    gram, vec = priv.initial()
    arms = np.zeros(horizon, dtype=np.int64)
    rewards, regret = np.zeros(horizon), np.zeros(horizon)
    for t in range(horizon):
        ctx, means = env.action_set()
        a, _ = jdp_arm(gram, vec, ctx, params, sigma=sigma, alpha=alpha)
        y = env.reward(means[a])
        arms[t], rewards[t], regret[t] = a, y, means.max() - means[a]
        gram, vec = priv.privatize(augmented_gram(ctx[a], y))
    return {"arms": arms, "rewards": rewards, "regret": regret}
