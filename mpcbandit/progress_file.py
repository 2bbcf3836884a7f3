"""A party's progress file: its iteration, its total and its rounds so far, rewritten in place.

Every party of a run rewrites its file up to four times a second while the launcher's display
and watchdog read them (103 processes on 2 cores in a SAMBA run of K = 100). A write is one
``pwrite`` of a fixed-width record over the old one, 5-6 µs of CPU here with the open and close,
where a new file renamed over the old took 95-150 µs. A read may catch a write half done: the record repeats the
iteration at its end, and a read whose two copies differ counts as no reading.
"""

from __future__ import annotations

import os
from pathlib import Path

from mpcbandit.files import OutputError

__all__ = ["write_progress", "read_progress"]

_RECORD = b"%20d %20d %20d %20d\n"


def write_progress(path: Path, iteration: int, total: int, rounds: int) -> None:
    """Record (iteration, total, rounds) in path, in place."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.pwrite(fd, _RECORD % (iteration, total, rounds, iteration), 0)
        finally:
            os.close(fd)
    except OSError as e:
        raise OutputError(path, e) from None


def read_progress(path: Path) -> tuple[int, int, int] | None:
    """(iteration, total, rounds) from path; None when absent, unreadable or caught mid-write."""
    try:
        fields = path.read_bytes().split()
    except OSError:
        return None
    if len(fields) != 4:
        return None
    try:
        iteration, total, rounds, again = (int(f) for f in fields)
    except ValueError:
        return None
    return (iteration, total, rounds) if iteration == again else None
