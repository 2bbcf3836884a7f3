"""Data sets and their lookup: files under ``../shared/data`` or ``$MPCBANDIT_DATA``; bandit
loaders return a ``BanditData`` (contexts and the reward of every arm at every step)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["BanditData", "data_root", "resolve_data_path"]


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


def data_root() -> Path:
    """$MPCBANDIT_DATA if set, else ``../shared/data`` beside the repository (or beside its
    parent, for a git worktree one level deeper)."""
    env = os.environ.get("MPCBANDIT_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for base in (repo.parent, repo.parent.parent):
        if (base / "shared" / "data").is_dir():
            return base / "shared" / "data"
    return repo.parent / "shared" / "data"


def resolve_data_path(name: str, key: str = "data") -> Path:
    """An existing file: name as given if absolute or present, else under data_root()."""
    from mpcbandit.errors import ConfigError

    p = Path(name).expanduser()
    if p.is_absolute() or p.exists():
        candidates = [p]
    else:
        candidates = [data_root() / p]
    for c in candidates:
        if c.is_file():
            return c
    raise ConfigError(key, f"data file {name!r} not found (looked at {', '.join(map(str, candidates))}; "
                           "set MPCBANDIT_DATA to the directory holding samba/data/...)")
