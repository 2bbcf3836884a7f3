"""Data sets and their lookup: files under ``../shared/data`` or ``$MPCBANDIT_DATA``; bandit
loaders return a ``BanditData`` (contexts and the reward of every arm at every step)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpcbandit.errors import ConfigError, DataError

#: the id column of every table (docs/data.md)
ID = "id"

__all__ = ["ID", "BanditData", "check_file", "data_root", "open_data_file", "read_data_file",
           "resolve_data_path"]


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


def check_file(path: Path) -> Path:
    """path, if it is a regular file; else a DataError naming it and why: missing, a folder,
    a FIFO or device (reading one could wait forever), or an errno on the way (a component
    that is a file, permission denied)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        raise DataError(f"{path}: cannot read it: {kind}, not a regular file")
    return Path(path)


def read_data_file(path: Path) -> bytes:
    """The bytes of a data file; a DataError naming it if it is not a readable regular file."""
    try:
        return check_file(path).read_bytes()
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None


def open_data_file(path: Path, text: bool = False):
    """A data file opened for reading (binary, or text as UTF-8 with universal newlines off, for
    csv); a DataError naming it if it is not a readable regular file."""
    try:
        check_file(path)
        return open(path, newline="", encoding="utf-8") if text else open(path, "rb")
    except OSError as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None


def resolve_data_path(name: str, key: str = "data") -> Path:
    """An existing file: name as given if absolute or present, else under data_root(); a
    ConfigError naming `key` if it is missing or cannot be read."""
    p = Path(name).expanduser()
    try:
        candidate = p if p.is_absolute() or p.exists() else data_root() / p
        if not candidate.exists():
            raise ConfigError(key, f"data file {name!r} not found (looked at {candidate}; set "
                                   "MPCBANDIT_DATA to the directory holding samba/data/...)")
        return check_file(candidate)
    except OSError as e:  # exists() passes on permission denied, a name too long, ...
        raise ConfigError(key, f"data file {name!r}: cannot read it ({type(e).__name__}: {e})") from None
    except DataError as e:
        raise ConfigError(key, str(e)) from None
