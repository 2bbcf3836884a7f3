"""FedUCB maths (Dubey & Pentland 2020, Alg. 1): the estimators, the sync rule, the schedules,
and an in-process simulation of the centralized algorithm for the figure sweeps.

One `FedEstimators` holds B estimators (the agents of a simulation, one agent in an agent
process, or the gamma round-robin estimators of a P2P agent), each with the synchronised
privatized sums (S, s), the local sums since its last sync (U, u), the augmented local Gram Q
that goes to the PRIVATIZER, and dt, the rounds since the last sync. Arms come from the shared
LinUCB core (`ucb_arms`, `oful_beta`).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.linear import logdet, oful_beta, ucb_arms
from mpcbandit.dp.accounting import PrivacyParams
from mpcbandit.dp.noise import NormalSource
from mpcbandit.dp.privatizer import Privatizer, bounded_rows

__all__ = ["SCHEDULES", "FedEstimators", "sync_rounds_of", "default_threshold",
           "prop1_bound", "simulate_centralized"]

SCHEDULES = ("threshold", "mlogt", "m1.5", "mt")


def sync_rounds_of(schedule: str, agents: int, horizon: int) -> list[int] | None:
    """1-based rounds after which a fixed schedule synchronises (None: log-det threshold).

    Communication is M messages per sync round, so: "mt" syncs every round (O(MT)), "mlogt"
    at rounds 1, 2, 4, 8, ... (O(M log T)), "m1.5" ceil(sqrt(M)) times evenly (O(M^1.5)).
    """
    if schedule == "threshold":
        return None
    if schedule == "mt":
        return list(range(1, horizon + 1))
    if schedule == "mlogt":
        return [2**j for j in range(int(math.log2(horizon)) + 1)]
    if schedule == "m1.5":
        n = min(horizon, math.ceil(math.sqrt(agents)))
        return sorted({max(1, round(horizon * (j + 1) / n)) for j in range(n)})
    raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")


def _log_term(horizon: int, dims: int, rho_min: float, rho_max: float, l2: float) -> float:
    return math.log(rho_max / rho_min + horizon * l2 / (dims * rho_min))


def default_threshold(horizon: int, dims: int, rho_min: float, rho_max: float, l2: float = 1.0) -> float:
    """D = 2 T d / (log(rho_max/rho_min + T L^2 / (d rho_min)) + 1) (Theorem 1's choice)."""
    return 2 * horizon * dims / (_log_term(horizon, dims, rho_min, rho_max, l2) + 1)


def prop1_bound(horizon: int, dims: int, threshold: float, rho_min: float, rho_max: float,
                l2: float = 1.0) -> float:
    """Proposition 1: sync rounds n <= 2 sqrt((d T / D) log(rho_max/rho_min + T L^2/(d rho_min))) + 4."""
    return 2 * math.sqrt(dims * horizon / threshold * _log_term(horizon, dims, rho_min, rho_max, l2)) + 4


class FedEstimators:
    """B FedUCB estimators; `pooled` agents' regularizers sum into each S (M when centralized)."""

    def __init__(self, count: int, dims: int, params: PrivacyParams, pooled, *,
                 sigma: float = 0.5, alpha: float = 0.1, beta: float | None = None):
        self.d, self.params, self.sigma, self.alpha = dims, params, sigma, alpha
        self.fixed_beta = beta  # a tuned radius used in place of Prop. 2's (None: Prop. 2's)
        self.pooled = np.broadcast_to(np.asarray(pooled, dtype=np.float64), (count,)).copy()
        eye = np.eye(dims)
        self.S = self.pooled[:, None, None] * params.rho_min * eye  # Alg. 1 step 1: M rho_min I
        self.s = np.zeros((count, dims))
        self.U = np.zeros((count, dims, dims))
        self.u = np.zeros((count, dims))
        self.Q = np.zeros((count, dims + 1, dims + 1))
        self.dt = np.zeros(count, dtype=np.int64)
        self.last_beta = np.zeros(count)  # Prop. 2's beta_t at the latest choice

    _STATE = ("S", "s", "U", "u", "Q", "dt", "last_beta")

    def state(self) -> dict:
        """Synced and local sums, counters and the last beta (for a checkpoint)."""
        return {k: getattr(self, k) for k in self._STATE}

    def load_state(self, state: dict) -> None:
        """Go on from a `state()` of estimators of the same shape."""
        for k in self._STATE:
            old = getattr(self, k)
            new = np.asarray(state[k], dtype=old.dtype)
            if new.shape != old.shape:
                raise ValueError(f"checkpointed estimator {k} has shape {new.shape}, "
                                 f"expected {old.shape}")
            setattr(self, k, new.copy())

    def choose(self, idx, contexts: np.ndarray) -> np.ndarray:
        """Steps 4-8: V = S + U, u = s + u_local, arms by UCB with beta of Prop. 2 (or the
        fixed beta, Prop. 2's still recorded)."""
        p, c = self.params, self.pooled[idx]
        v = self.S[idx] + self.U[idx]
        beta = oful_beta(logdet(v), self.d, c * p.rho_min, c * p.rho_max, c * p.gamma,
                         sigma=self.sigma, alpha=self.alpha)
        self.last_beta[idx] = beta
        used = beta if self.fixed_beta is None else self.fixed_beta
        return ucb_arms(v, self.s[idx] + self.u[idx], contexts, used)

    def observe(self, idx, x: np.ndarray, y: np.ndarray) -> None:
        """Steps 10-11: local Gram/reward sums and the augmented [x y]^T [x y] (bounded: it is
        what the privatizer releases)."""
        a = bounded_rows(x, y)
        self.U[idx] += np.einsum("bi,bj->bij", x, x)
        self.u[idx] += y[:, None] * x
        self.Q[idx] += np.einsum("bi,bj->bij", a, a)
        self.dt[idx] += 1

    def sync_wanted(self, idx, threshold: float) -> np.ndarray:
        """Step 12: dt (log det(S + U + c(rho_max - rho_min) I) - log det S) >= D.

        The printed shift c(rho_max - rho_min) I alone adds about d ln 2 to the log-det gap
        under Gaussian noise, so with noise the rule fires every ~D/(d ln 2) rounds and can
        exceed Proposition 1's count for small D (tests check the bound without noise and at
        Theorem 1's D).
        """
        shift = self.pooled[idx] * (self.params.rho_max - self.params.rho_min)
        v = self.S[idx] + self.U[idx] + shift[:, None, None] * np.eye(self.d)
        return self.dt[idx] * (logdet(v) - logdet(self.S[idx])) >= threshold

    def take_local(self, idx) -> np.ndarray:
        """Step 16/21/24: hand Q to the PRIVATIZER and reset the local sums."""
        q = self.Q[idx].copy()
        self.Q[idx] = 0.0
        self.U[idx] = 0.0
        self.u[idx] = 0.0
        self.dt[idx] = 0
        return q

    def set_synced(self, idx, gram: np.ndarray, vec: np.ndarray) -> None:
        """Step 20: S, s <- the controller's sums of the privatized (U^, u^)."""
        self.S[idx] = (gram + np.swapaxes(gram, -1, -2)) / 2
        self.s[idx] = vec


def simulate_centralized(*, agents: int, dims: int, actions: int, horizon: int,
                         params: PrivacyParams, schedule: str, threshold: float, seed: int,
                         source: Callable[[int], NormalSource], sigma: float = 0.5,
                         alpha: float = 0.1, beta: float | None = None) -> dict:
    """Centralized FedUCB in one process (vectorised over agents), for figure sweeps.

    The agent and controller processes of protocol `feducb` run the same steps on the same
    streams (agent i's users: stream f"agent{i}"), so a seeded run of both gives the same arms.
    """
    envs = [GapEnvironment(seed, dims, actions, f"agent{i}") for i in range(agents)]
    privs = [Privatizer(params, source(i)) for i in range(agents)]
    est = FedEstimators(agents, dims, params, agents, sigma=sigma, alpha=alpha, beta=beta)
    fixed = sync_rounds_of(schedule, agents, horizon)
    fixed_set = set(fixed or ())
    idx = np.arange(agents)
    arms = np.zeros((horizon, agents), dtype=np.int64)
    rewards = np.zeros((horizon, agents))
    regret = np.zeros(horizon)
    random_regret = np.zeros(horizon)  # a uniformly random choice's expectation, same action sets
    syncs = []
    for t in range(1, horizon + 1):
        sets = [e.action_set() for e in envs]
        ctx = np.stack([s[0] for s in sets])
        means = np.stack([s[1] for s in sets])
        a = est.choose(idx, ctx)
        y = np.array([envs[i].reward(means[i, a[i]]) for i in idx])
        arms[t - 1], rewards[t - 1] = a, y
        regret[t - 1] = float(np.sum(means.max(axis=1) - means[idx, a]))
        random_regret[t - 1] = float(np.sum(means.max(axis=1) - means.mean(axis=1)))
        est.observe(idx, ctx[idx, a], y)
        sync = t in fixed_set if fixed is not None else bool(est.sync_wanted(idx, threshold).any())
        if sync:
            q = est.take_local(idx)
            released = [privs[i].privatize(q[i]) for i in idx]
            est.set_synced(idx, sum(r[0] for r in released), sum(r[1] for r in released))
            syncs.append(t)
    return {"arms": arms, "rewards": rewards, "regret": regret, "random_regret": random_regret,
            "sync_at": syncs}
