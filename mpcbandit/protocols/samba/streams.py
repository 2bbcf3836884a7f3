"""SAMBA's seeds and keyed streams: where every party's randomness comes from, and the mask
alpha_t. Fresh (os.urandom) in a deployment; derived from the config seed in the reproduction
mode (``samba.fresh_seeds = false``), where anyone holding the config could replay them."""

from __future__ import annotations

import math
import os

import numpy as np

from mpcbandit.bandits.mab import Algorithm
from mpcbandit.config import Config
from mpcbandit.crypto.streams import KeyedStream, derive_seed

__all__ = ["MASK_LOG2_RANGE", "protocol_seed", "pull_stream", "thompson_rng", "sigma_streams",
           "select_streams", "masked", "mask"]

MASK_LOG2_RANGE = 20.0                # alpha_t = 2^x, x uniform in [-20, 20)


def protocol_seed(cfg: Config, purpose: str) -> bytes:
    """A protocol seed: fresh, or derived from the config seed for reproducible runs."""
    if cfg.section.fresh_seeds:
        return os.urandom(32)
    return derive_seed(cfg.seed, f"samba/{purpose}")


def pull_stream(seed: bytes) -> KeyedStream:
    """Arm i's environment from its seed ``protocol_seed(cfg, f"pull/{i}")``: its reward at step t is
    1 iff row t < mu_i.

    Drawn by data owner i alone (fresh) in a deployment; from the config seed only in the
    reproduction mode, where anyone holding the config could replay every reward.
    """
    return KeyedStream(seed, "pull")


def thompson_rng(seed: bytes) -> np.random.Generator:
    """Data owner i's Thompson sampler (Beta draws) from its seed."""
    return np.random.Generator(np.random.Philox(key=int.from_bytes(seed[:16], "little")))


def sigma_streams(seed: bytes, k: int, iterations: int) -> list[KeyedStream]:
    """sigma_{t,l}: a fresh uniform permutation of K positions per step and iteration."""
    return [KeyedStream(seed, f"sigma/{l}", width=k, transform=lambda u: np.argsort(u, axis=1).tolist())
            for l in range(1, iterations + 1)]


def select_streams(seed: bytes, iterations: int) -> list[KeyedStream]:
    """Comp's uniforms per step and iteration (its random choices: Softmax, exploration position)."""
    return [KeyedStream(seed, f"select/{l}") for l in range(1, iterations + 1)]


def masked(alg: Algorithm, alpha: float, v: float) -> float:
    """alpha_t applied to a score: a factor, or in the log domain an offset log(alpha_t)."""
    return v + math.log(alpha) if alg.log_scores else alpha * v


def mask(u: float) -> float:
    """alpha_t > 0, log-uniform: hides the scale of the scores from Comp."""
    return 2.0 ** (2.0 * MASK_LOG2_RANGE * u - MASK_LOG2_RANGE)
