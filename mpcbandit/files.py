"""Everything mpcbandit writes: private (0600 files, 0700 folders), atomic, and failing with
the file and the errno named; and the run folder's lock, so two runs never share one."""

from __future__ import annotations

import errno
import fcntl
import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

from mpcbandit.errors import MpcBanditError

__all__ = ["OutputError", "RunLock", "RUN_MARKS", "claim_run_folder", "default_run_dir",
           "make_private_dir", "write_private", "write_json", "json_safe"]

#: the files that make a folder an mpcbandit run's: the launcher's record, the summary, the lock
RUN_MARKS = ("run.json", "summary.json", "run.lock")


def default_run_dir(name: str) -> Path:
    """Where a run or an experiment writes when not told: runs/NAME-YYYYmmdd-HHMMSS."""
    return Path("runs") / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"


class OutputError(MpcBanditError):
    """A file or folder could not be written; names the path and the errno."""

    def __init__(self, path: Path, err: OSError | str, doing: str = "write"):
        self.path = path
        if isinstance(err, str):  # a refusal of ours, not the system's
            super().__init__(f"cannot {doing} {path}: {err}")
            return
        code = errno.errorcode.get(err.errno, str(err.errno)) if err.errno else "?"
        super().__init__(f"cannot {doing} {path}: {err.strerror or err} ({code})")


def make_private_dir(path: Path) -> Path:
    """Create path (and missing parents) as 0700 folders; name the blocking file if any."""
    path = Path(path)
    for parent in [*reversed(path.parents), path]:
        if parent.exists() and not parent.is_dir():
            raise OutputError(path, NotADirectoryError(errno.ENOTDIR, f"{parent} is a file, "
                                                       "not a folder"), "create folder")
    try:
        # one by one: mkdir(parents=True) would make the missing parents by the umask, not 0700
        for folder in [*reversed(path.parents), path]:
            if not folder.is_dir():
                folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as e:
        raise OutputError(path, e, "create folder") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(path, PermissionError(errno.EACCES, "folder not writable"),
                          "write into")
    return path


def claim_run_folder(path: Path) -> Path:
    """The folder a run writes into: made (0700) if missing; an existing one only if it is this
    user's, writable by no one else, and empty or an earlier run's (RUN_MARKS). Its mode is
    never changed: anything else is an OutputError naming it."""
    path = Path(path)
    if not path.is_dir():  # only a folder made here needs its parent writable (not a mount point)
        make_private_dir(path.parent)
    try:
        path.mkdir(mode=0o700)
        return path
    except FileExistsError:
        pass
    except OSError as e:
        raise OutputError(path, e, "create folder") from None
    doing = "use as the run folder"
    try:
        st = path.stat()
        entries = sorted(os.listdir(path)) if stat.S_ISDIR(st.st_mode) else []
    except OSError as e:
        raise OutputError(path, e, doing) from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(path, "it is a file, not a folder", doing)
    new_path = "give a path that does not exist yet (mpcbandit makes it, mode 0700)"
    if entries and not set(entries) & set(RUN_MARKS):
        shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        raise OutputError(path, f"it holds {count} ({shown}) and no mpcbandit run; "
                                f"a run never writes into, nor changes the mode of, a folder it did "
                                f"not make: {new_path}", doing)
    if st.st_uid != os.geteuid():
        raise OutputError(path, f"it belongs to another user (uid {st.st_uid}), who could change "
                                f"what the run writes: {new_path}", doing)
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OutputError(path, f"group or others may write in it (mode "
                                f"{stat.S_IMODE(st.st_mode):04o}) and could replace what the run "
                                f"writes: {new_path}", doing)
    if not os.access(path, os.W_OK | os.X_OK):
        raise OutputError(path, PermissionError(errno.EACCES, "folder not writable"), "write into")
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
    without asking; a live holder is named by the pid it wrote. The folder is claimed first
    (`claim_run_folder`). A new run (`fresh`) refuses a finished run's folder: its summary is
    written under the lock, so once the lock is ours its presence says the run is over.
    """

    def __init__(self, folder: Path, *, fresh: bool = False):
        self.path = Path(folder) / "run.lock"
        self.fresh = fresh
        self.fd: int | None = None

    def acquire(self) -> "RunLock":
        """Take the lock or raise naming the run that holds it (or the finished run there)."""
        folder = claim_run_folder(self.path.parent)
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
        if self.fresh and (folder / "summary.json").exists():
            os.close(fd)
            raise MpcBanditError(f"{folder} already holds a finished run ({folder / 'summary.json'}"
                                 "): nothing to resume, and a new run needs another --out")
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
