"""Everything mpcbandit writes: private (0600 files, 0700 folders), atomic, and failing with
the file and the errno named; and the run folder's lock, so two runs never share one."""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import time
from pathlib import Path
from typing import Any

from mpcbandit.errors import MpcBanditError

__all__ = ["OutputError", "RunLock", "default_run_dir", "make_private_dir", "write_private",
           "write_json", "json_safe"]


def default_run_dir(name: str) -> Path:
    """Where a run or an experiment writes when not told: runs/NAME-YYYYmmdd-HHMMSS."""
    return Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


class OutputError(MpcBanditError):
    """A file or folder could not be written; names the path and the errno."""

    def __init__(self, path: Path, err: OSError, doing: str = "write"):
        code = errno.errorcode.get(err.errno, str(err.errno)) if err.errno else "?"
        self.path = path
        super().__init__(f"cannot {doing} {path}: {err.strerror or err} ({code})")


def make_private_dir(path: Path) -> Path:
    """Create path (and missing parents) as 0700 folders; name the blocking file if any."""
    path = Path(path)
    for parent in [*reversed(path.parents), path]:
        if parent.exists() and not parent.is_dir():
            raise OutputError(path, NotADirectoryError(errno.ENOTDIR, f"{parent} is a file, "
                                                       "not a folder"), "create folder")
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(path, e, "create folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(path, PermissionError(errno.EACCES, "folder not writable"),
                          "write into")
    return path


def write_private(path: Path, data: bytes | str) -> Path:
    """Write data to path atomically (a reader never sees half a file), mode 0600."""
    path = Path(path)
    make_private_dir(path.parent)
    raw = data.encode() if isinstance(data, str) else data
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            view = memoryview(raw)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(path, e) from None
    return path


def json_safe(obj: Any) -> Any:
    """obj with non-finite floats as null: JSON has no NaN, and readers choke on it."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    return obj


def write_json(path: Path, obj: Any) -> Path:
    """Write obj as strict JSON, privately and atomically."""
    try:
        text = json.dumps(obj, indent=1, allow_nan=False)
    except ValueError:
        text = json.dumps(json_safe(obj), indent=1, allow_nan=False)
    return write_private(path, text)


class RunLock:
    """An advisory lock on a run folder, held while a run writes into it.

    The kernel drops an fcntl lock when its process dies, so a dead run's lock is taken over
    without asking; a live holder is named by the pid it wrote.
    """

    def __init__(self, folder: Path):
        self.path = Path(folder) / "run.lock"
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        """Take the lock or raise naming the run that holds it."""
        make_private_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise OutputError(self.path, e, "open lock file") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise MpcBanditError(f"{self.path.parent} is in use by another run (pid {holder}, "
                                 f"lock {self.path}); give another --out or stop that run") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (the file stays; its content is only informative)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
