"""Shared by the differentially private linear bandit protocols (`jdp`, `feducb`).

The noise source of a privatizer, the `--plaintext` path (the same role code run in-process
over queue channels with the noise switched off) and the regret fields of the summary.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mpcbandit.bodies import expect_array, expect_fields
from mpcbandit.config import Config
from mpcbandit.dp.noise import NormalSource, seeded_source

__all__ = ["noise_source", "noise_off", "regret_fields", "expect_statistics"]


def noise_source(cfg: Config, seeded: bool, purpose: str) -> NormalSource:
    """Privacy noise: AES-CTR from os.urandom, or from the config seed when `seeded` (tests)."""
    return seeded_source(cfg.seed, purpose) if seeded else NormalSource()


def noise_off(cfg: Config) -> Config:
    """cfg with its protocol section's noise set to "none" (the `--plaintext` reference)."""
    return dataclasses.replace(cfg, section=dataclasses.replace(cfg.section, noise="none"))


def regret_fields(regret_per_round: np.ndarray, agents: int = 1) -> dict:
    """Per-round and cumulative (group) pseudo-regret, final and per agent."""
    per_round = np.asarray(regret_per_round, dtype=np.float64)
    cum = np.cumsum(per_round)
    final = float(cum[-1]) if cum.size else 0.0
    return {"regret": per_round.tolist(), "cumulative_regret": cum.tolist(),
            "final_regret": final, "final_regret_per_agent": final / agents}


def expect_statistics(body, dims: int, peer: str, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """(gram d x d, vec d) of a peer's message {"gram", "vec"}, checked (a ProtocolError
    naming the peer and tag otherwise)."""
    body = expect_fields(body, ("gram", "vec"), peer, tag)
    return (expect_array(body["gram"], (dims, dims), peer, tag),
            expect_array(body["vec"], (dims,), peer, tag))
