"""A party's data folder holds what its role reads: a table put in another party's folder (a
`rewards.csv` in `reward_holder.0/`) would never be read, silently, so the party warns, naming
the folder where it belongs. The readers note each table they look for (``note_read``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Callable

__all__ = ["note_read", "stray_files", "warn_stray"]

log = logging.getLogger("mpcbandit.data")

#: (real folder, stem) of every table this process looked for, found or not
_LOOKED_FOR: set[tuple[str, str]] = set()


def note_read(folder: Path, stem: str) -> None:
    """A reader looked for folder/stem.* (whether or not it is there)."""
    _LOOKED_FOR.add((os.path.realpath(folder), stem))


def _stem(name: str) -> str:
    return name.split(".", 1)[0]


def stray_files(folder: Path) -> list[str]:
    """The files of folder that no reader of this process looked for (hidden ones aside)."""
    real = os.path.realpath(folder)
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [n for n in names if not n.startswith(".") and (real, _stem(n)) not in _LOOKED_FOR
            and os.path.isfile(os.path.join(folder, n))]


def warn_stray(folder: Path, party: str, readers: Callable[[], dict[str, list[str]]]) -> list[str]:
    """Warn of each stray file of party's folder, naming the parties whose folder takes it
    (readers(): stem -> parties, asked only when there is a stray file); the warnings."""
    strays = stray_files(folder)
    if not strays:
        return []
    takes = readers()
    warnings = []
    for name in strays:
        where = takes.get(_stem(name), [])
        warnings.append(f"{party}: {Path(folder) / name} is not read by {party}: "
                        + (f"it belongs in the folder of {', '.join(where)}" if where
                           else "no party of this protocol reads it (docs/data.md)"))
        log.warning("%s", warnings[-1])
    return warnings
