"""Bandit datasets: contexts and the reward of every arm at every step (numpy, no I/O beyond
reading files). Every loader returns a ``BanditData``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["BanditData", "default_data_dir"]


@dataclass(frozen=True)
class BanditData:
    """T contexts (T x D, float64) and the reward each of A arms would give (T x A, 0/1).

    ``expected`` (T x A) is the mean reward of each arm (equal to ``rewards`` when rewards
    are deterministic), for regret.
    """

    contexts: np.ndarray
    rewards: np.ndarray
    expected: np.ndarray

    @property
    def iterations(self) -> int:
        return self.contexts.shape[0]

    @property
    def dims(self) -> int:
        return self.contexts.shape[1]

    @property
    def arms(self) -> int:
        return self.rewards.shape[1]


def default_data_dir() -> Path:
    """$MPCBANDIT_DATA, else the nearest shared/data beside the repository or a parent of it."""
    env = os.environ.get("MPCBANDIT_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for parent in repo.parents:
        if (parent / "shared" / "data").is_dir():
            return parent / "shared" / "data"
    return repo.parent / "shared" / "data"
