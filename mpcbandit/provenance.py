"""What code made a result: mpcbandit's version, the git commit, and the libraries' versions."""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path

import numpy as np
import zmq

import mpcbandit

__all__ = ["git_commit", "software_versions"]

_ROOT = Path(mpcbandit.__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def git_commit(root: Path = _ROOT) -> str | None:
    """The checkout's short commit, with '+changes' if tracked files differ; None outside git."""
    if not (root / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return head + ("+changes" if dirty else "")


def software_versions() -> dict:
    """The summary's `software`: commit and the versions a result may depend on."""
    return {"commit": git_commit(), "python": platform.python_version(), "numpy": np.__version__,
            "pyzmq": zmq.__version__, "libzmq": zmq.zmq_version()}
