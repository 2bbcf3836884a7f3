"""Ridge-regression linear bandits: LinUCB and LinTS, shared by every linear protocol.

The statistics are V = reg + sum x x^T (d x d) and b = sum r x. Callers keep V^{-1} up to
date with ``sherman_morrison`` (O(d^2) per observation) or re-solve; a protocol that adds
noise to V or b (FedUCB, JDP) passes the noisy ones.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sherman_morrison", "ridge_theta", "ucb_scores", "ts_theta", "LinearBandit"]


def sherman_morrison(v_inv: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(V + x x^T)^{-1} from V^{-1}, for symmetric V."""
    vx = v_inv @ x
    return v_inv - np.outer(vx, vx) / (1.0 + x @ vx)


def ridge_theta(v_inv: np.ndarray, b: np.ndarray) -> np.ndarray:
    """theta_hat = V^{-1} b."""
    return v_inv @ b


def ucb_scores(contexts: np.ndarray, theta: np.ndarray, v_inv: np.ndarray, beta: float) -> np.ndarray:
    """x^T theta + beta * ||x||_{V^{-1}} for each row x of contexts (K x d)."""
    width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", contexts, v_inv, contexts), 0.0))
    return contexts @ theta + beta * width


def ts_theta(theta: np.ndarray, v_inv: np.ndarray, v: float, rng: np.random.Generator) -> np.ndarray:
    """A Thompson sample theta ~ N(theta_hat, v^2 V^{-1})."""
    chol = np.linalg.cholesky((v_inv + v_inv.T) / 2)
    return theta + v * (chol @ rng.standard_normal(theta.shape[0]))


class LinearBandit:
    """Disjoint-free linear bandit state (one theta shared by all arms): V^{-1}, b, theta."""

    def __init__(self, dims: int, lam: float = 1.0):
        if lam <= 0:
            raise ValueError(f"ridge regularizer lambda must be > 0, got {lam}")
        self.v_inv = np.eye(dims) / lam
        self.b = np.zeros(dims)

    @property
    def theta(self) -> np.ndarray:
        return ridge_theta(self.v_inv, self.b)

    def choose_ucb(self, contexts: np.ndarray, beta: float) -> int:
        """Index of the arm with the highest UCB (first on ties)."""
        return int(np.argmax(ucb_scores(contexts, self.theta, self.v_inv, beta)))

    def choose_ts(self, contexts: np.ndarray, v: float, rng: np.random.Generator) -> int:
        """Index of the arm best under a Thompson sample."""
        return int(np.argmax(contexts @ ts_theta(self.theta, self.v_inv, v, rng)))

    def update(self, x: np.ndarray, reward: float) -> None:
        """Add one observation (x, reward)."""
        self.v_inv = sherman_morrison(self.v_inv, x)
        self.b = self.b + reward * x
