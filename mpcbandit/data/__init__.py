"""Data sources: loaders for the shared data sets and synthetic generators."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shared_data_dir"]


def shared_data_dir() -> Path:
    """$MPCBANDIT_DATA if set, else the nearest shared/data above the repository root.

    ../shared/data from the repository root in a checkout; worktrees one level deeper
    (/work/wt/<name>) find the same directory one level further up.
    """
    env = os.environ.get("MPCBANDIT_DATA")
    if env:
        return Path(env)
    root = Path(__file__).resolve().parents[2]
    for up in root.parents:
        if (up / "shared" / "data").is_dir():
            return up / "shared" / "data"
    return root.parent / "shared" / "data"
