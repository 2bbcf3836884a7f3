"""Arrays fitted on public data (MNIST's PCA basis, and MNIST projected on it), kept on disk so
that each party process of a run, and each later run, reads them instead of fitting and
projecting again (seconds of CPU a process).

The folder is $MPCBANDIT_CACHE, else $XDG_CACHE_HOME/mpcbandit, else ~/.cache/mpcbandit; an
entry is named by a digest of what it was fitted on, so a changed file is fitted anew. Only
public data may be cached here: the folder is shared by every party of one account. A folder
that cannot be made or written, or an entry that does not read back whole, costs a fit, never
an error.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Callable

import numpy as np

__all__ = ["cache_dir", "digest_files", "fitted"]

log = logging.getLogger("mpcbandit.data")

#: bump when what an entry holds changes meaning
FORMAT = 1


def cache_dir() -> Path:
    """$MPCBANDIT_CACHE, else $XDG_CACHE_HOME/mpcbandit, else ~/.cache/mpcbandit."""
    env = os.environ.get("MPCBANDIT_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mpcbandit"


def digest_files(*paths: Path, extra: str = "") -> str:
    """A sha256 of the files' bytes and extra (what the entry depends on besides them)."""
    h = hashlib.sha256(f"{FORMAT}|{extra}".encode())
    for p in paths:
        h.update(Path(p).read_bytes())
    return h.hexdigest()[:32]


def _read(path: Path, names: tuple[str, ...]) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            got = {n: z[n] for n in names}
    except FileNotFoundError:
        return None
    except Exception as e:  # torn or foreign file: fitted again, and rewritten
        log.warning("cache entry %s unreadable (%s: %s): fitting again", path, type(e).__name__, e)
        return None
    if not all(np.all(np.isfinite(a)) for a in got.values() if a.dtype.kind == "f"):
        log.warning("cache entry %s holds non-finite values: fitting again", path)
        return None
    return got


def _write(path: Path, arrays: dict[str, np.ndarray]) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)   # whole or not at all: another party may read it now
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError as e:
        log.info("cannot keep %s in the cache (%s): the next process fits it again", path.name, e)


def fitted(name: str, key: str, names: tuple[str, ...],
           fit: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays `names` of entry name-key: read from the cache, or fit() and kept there."""
    path = cache_dir() / f"{name}-{key}.npz"
    got = _read(path, names)
    if got is not None:
        return got
    arrays = fit()
    _write(path, arrays)
    return arrays
