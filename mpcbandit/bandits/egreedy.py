"""epsilon-greedy disjoint linear bandit of Hannun et al. Algorithm 1, in float64 numpy, and
the exploration stream (y_t ~ Bernoulli(eps), v_t ~ Uniform(0,1), tie-break permutation)
that the secure run's dealer and this reference draw identically.

Per arm: W_a^{-1} (kept by Sherman-Morrison, eq. 1), b_a; score s_a = w_a^T x with
w_a = W_a^{-1} b_a; DP score y v_a + (1 - y) s_a; argmax with ties broken by the largest
entry of a random permutation gamma (Hannun et al. §3, "Argmax").
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from mpcbandit.mpc.prg import Prg

__all__ = ["ExplorationSamples", "exploration_key", "draw_exploration", "tie_break_argmax",
           "EpsGreedyResult", "run_eps_greedy"]

_U53 = float(2 ** 53)


@dataclass(frozen=True)
class ExplorationSamples:
    """Per step t: explore[t] in {0,1}; uniform[t, a] = v numerators (v = k / 2^bits);
    perm[t, a] in 1..A, a permutation per step."""

    explore: np.ndarray
    uniform: np.ndarray
    perm: np.ndarray
    bits: int

    def v(self) -> np.ndarray:
        """v as floats (exactly the fixed-point values the dealer shares)."""
        return self.uniform.astype(np.float64) / 2.0 ** self.bits

    def slice(self, start: int, stop: int) -> "ExplorationSamples":
        return ExplorationSamples(self.explore[start:stop], self.uniform[start:stop],
                                  self.perm[start:stop], self.bits)


def exploration_key(seed: int) -> bytes:
    """The reproducible exploration key of a config seed (the 'seeded' exploration mode)."""
    return hashlib.sha256(f"mpcbandit/hannun/exploration/{seed}".encode()).digest()


def draw_exploration(prg: Prg, steps: int, arms: int, epsilon: float, bits: int) -> ExplorationSamples:
    """The next `steps` steps of the stream; drawing in chunks gives the same samples."""
    words = prg.ring((steps, 1 + 2 * arms))  # per step: 1 word for y, A for v, A for gamma
    explore = ((words[:, 0] >> np.uint64(11)).astype(np.float64) / _U53 < epsilon).astype(np.int64)
    uniform = (words[:, 1:1 + arms] >> np.uint64(64 - bits)).astype(np.int64)
    perm = np.argsort(np.argsort(words[:, 1 + arms:], axis=1, kind="stable"), axis=1) + 1
    return ExplorationSamples(explore, uniform, perm.astype(np.int64), bits)


def tie_break_argmax(scores: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Per row: among the maximal scores, the arm with the largest perm entry."""
    best = scores == scores.max(axis=-1, keepdims=True)
    return np.argmax(np.where(best, perm, 0), axis=-1)


@dataclass
class EpsGreedyResult:
    arms: np.ndarray
    rewards: np.ndarray
    w_inv: np.ndarray
    b: np.ndarray
    checkpoints: dict


def run_eps_greedy(contexts: np.ndarray, rewards: np.ndarray, samples: ExplorationSamples, *,
                   regularizer: float = 0.0, reinvert_every: int = 0,
                   checkpoints: tuple[int, ...] = ()) -> EpsGreedyResult:
    """Algorithm 1 in the clear: T steps over contexts (T x D) with rewards (T x A).

    W_a starts at (1 + regularizer) I; every reinvert_every steps (0: never) W_a^{-1} is
    recomputed exactly from W_a (§7). checkpoints: steps after which (W^{-1}, b) are kept.
    """
    steps, dims = contexts.shape
    arms = rewards.shape[1]
    w_inv = np.repeat(np.eye(dims)[None] / (1.0 + regularizer), arms, axis=0)
    w = np.repeat(np.eye(dims)[None] * (1.0 + regularizer), arms, axis=0) if reinvert_every else None
    b = np.zeros((arms, dims))
    v = samples.v()
    chosen = np.empty(steps, dtype=np.int64)
    got = np.empty(steps)
    kept = {}
    for t in range(steps):
        x = contexts[t]
        u = w_inv @ x                                   # W_a^{-1} x, all arms
        s = np.einsum("ad,ad->a", b, u)                 # s_a = (W_a^{-1} b_a)^T x
        dp = v[t] if samples.explore[t] else s          # step 13: y v + (1 - y) s
        a = int(tie_break_argmax(dp, samples.perm[t]))  # step 15, random tie-break
        chosen[t], got[t] = a, rewards[t, a]
        ua = u[a]
        w_inv[a] -= np.outer(ua, ua) / (1.0 + x @ ua)  # eq. 1 (only o_a = 1 changes)
        b[a] += got[t] * x                              # step 22
        if w is not None:
            w[a] += np.outer(x, x)                      # step 21
            if (t + 1) % reinvert_every == 0:
                w_inv = np.linalg.inv(w)
        if t + 1 in checkpoints:
            kept[t + 1] = (w_inv.copy(), b.copy())
    return EpsGreedyResult(chosen, got, w_inv, b, kept)
