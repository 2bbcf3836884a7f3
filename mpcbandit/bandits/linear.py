"""Ridge-regression linear bandits: LinUCB and LinTS, shared by every linear protocol.

The statistics are V = reg + sum x x^T (d x d) and b = sum r x. Callers keep V^{-1} up to
date with ``sherman_morrison`` (O(d^2) per observation) or re-solve; a protocol that adds
noise to V or b (FedUCB, JDP) passes the noisy ones.
"""

from __future__ import annotations

import numpy as np

__all__ = ["argmax_first", "sherman_morrison", "ridge_theta", "ucb_scores", "ts_theta", "ts_scores",
           "psd_sqrt", "LinearBandit", "ucb_arms", "oful_beta", "logdet"]


def argmax_first(scores: np.ndarray, tie_tol: float = 0.0) -> int:
    """First index whose score is within tie_tol * max(1, |best|) of the best.

    With tie_tol > 0 ties broken by rounding noise go to the lowest index, so two runs whose
    scores agree only to rounding (e.g. in rotated coordinates) pick the same arm.
    """
    best = scores.max()
    if tie_tol <= 0:
        return int(np.argmax(scores))
    return int(np.argmax(scores >= best - tie_tol * max(1.0, abs(best))))


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


def psd_sqrt(a: np.ndarray) -> np.ndarray:
    """The symmetric square root of a symmetric positive semi-definite matrix."""
    w, u = np.linalg.eigh((a + a.T) / 2)
    return (u * np.sqrt(np.maximum(w, 0.0))) @ u.T


def ts_scores(contexts: np.ndarray, theta: np.ndarray, v_inv: np.ndarray, v: float,
              rng: np.random.Generator) -> np.ndarray:
    """Thompson-sampled arm scores x_a^T mu, mu ~ N(theta_hat, v^2 V^{-1}), drawn in score space.

    The scores s = X theta_hat + v S z with S = (X V^{-1} X^T)^{1/2} and z ~ N(0, I_K) have
    exactly the law of X mu (Cao et al. 2023, Thm A.1), and, unlike a sample of mu, depend
    on the contexts only through inner products: any orthogonal change of basis of the
    contexts (x -> Qx, V^{-1} -> Q V^{-1} Q^T) gives the same scores from the same z.
    """
    k, d = contexts.shape
    z = rng.standard_normal(k)
    if k <= d:
        noise = psd_sqrt(contexts @ v_inv @ contexts.T) @ z          # O(K d^2 + K^3)
    else:  # (X L)(X L)^T = X V^{-1} X^T for any L L^T = V^{-1}: thin SVD, O(d^3 + K d^2)
        u, sv, _ = np.linalg.svd(contexts @ np.linalg.cholesky((v_inv + v_inv.T) / 2),
                                 full_matrices=False)
        noise = u @ (sv * (u.T @ z))
    return contexts @ theta + v * noise


def logdet(v: np.ndarray) -> np.ndarray:
    """log det V for a symmetric positive definite V or a stack of them (..., d, d)."""
    sign, value = np.linalg.slogdet(v)
    return np.where(sign > 0, value, -np.inf)


def oful_beta(logdet_v, dims: int, rho_min: float, rho_max: float, gamma: float, *,
              sigma: float = 0.5, s: float = 1.0, alpha: float = 0.1):
    """Confidence radius with changing regularizers (Shariff & Sheffet 2018, Prop. 4):
    sigma sqrt(2 ln(2/alpha) + log det V - d ln rho_min) + S sqrt(rho_max) + gamma.

    With rho_min = rho_max = lambda and gamma = 0 it is the OFUL radius of ridge LinUCB.
    """
    inner = 2 * np.log(2 / alpha) + np.asarray(logdet_v) - dims * np.log(rho_min)
    return sigma * np.sqrt(np.maximum(inner, 0.0)) + s * np.sqrt(rho_max) + gamma


def ucb_arms(v: np.ndarray, u: np.ndarray, contexts: np.ndarray, beta) -> np.ndarray:
    """LinUCB's arms for a batch of statistics given directly (noisy ones allowed):
    argmax_k x_k^T V^{-1} u + beta ||x_k||_{V^{-1}}, with v (B,d,d), u (B,d), contexts (B,K,d)."""
    v_inv = np.linalg.inv(v)
    theta = np.einsum("bde,be->bd", v_inv, u)
    width = np.sqrt(np.maximum(np.einsum("bkd,bde,bke->bk", contexts, v_inv, contexts), 0.0))
    scores = np.einsum("bkd,bd->bk", contexts, theta) + np.asarray(beta).reshape(-1, 1) * width
    return np.argmax(scores, axis=1)


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

    def choose_ucb(self, contexts: np.ndarray, beta: float, tie_tol: float = 0.0) -> int:
        """Index of the arm with the highest UCB (first on ties, see argmax_first)."""
        return argmax_first(ucb_scores(contexts, self.theta, self.v_inv, beta), tie_tol)

    def choose_ts(self, contexts: np.ndarray, v: float, rng: np.random.Generator) -> int:
        """Index of the arm best under a Thompson sample."""
        return int(np.argmax(contexts @ ts_theta(self.theta, self.v_inv, v, rng)))

    def choose_ts_scores(self, contexts: np.ndarray, v: float, rng: np.random.Generator,
                         tie_tol: float = 0.0) -> int:
        """Index of the arm best under Thompson-sampled scores (rotation-invariant, ts_scores)."""
        return argmax_first(ts_scores(contexts, self.theta, self.v_inv, v, rng), tie_tol)

    def update(self, x: np.ndarray, reward: float) -> None:
        """Add one observation (x, reward)."""
        self.v_inv = sherman_morrison(self.v_inv, x)
        self.b = self.b + reward * x
