"""A party's write-ahead log: every accepted context, decision and reward, durable (fsync'd)
before the application hears it was accepted.

One record per line, ``CRC32 JSON\\n`` (the CRC of the JSON's bytes, 8 hex digits): readable
with any tool, and a record cut short by a crash is told from a whole one. Appends are
grouped: one thread writes whatever has queued up while the previous fsync ran and syncs it
once, so many concurrent requests share one fsync. A record's callback (``then``) runs after
its fsync, in log order, before its future resolves: what the shell hands to the backend is
therefore in the log, in the log's order.

On open the log is read back. A write cut short by a crash leaves a last line without its
newline: that record was never acknowledged (acknowledging waits for its fsync), so it is
dropped and cut off. A whole line (newline and all) whose CRC or JSON is wrong was written
whole, so it may have been acknowledged: it is refused naming file and line, wherever it is.
What was read back is walked again from the file whenever a reader asks (``records``): it is
never held in memory whole.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
import zlib
from concurrent.futures import Future, InvalidStateError
from pathlib import Path
from typing import Any, Callable, Iterator

from mpcbandit.errors import DataError
from mpcbandit.files import OutputError, make_private_dir

__all__ = ["WriteAheadLog", "LogRecords", "encode_record", "read_records"]

log = logging.getLogger(__name__)


#: one encoder for every record (json.dumps with options builds a new one per call)
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def encode_record(record: dict) -> bytes:
    """One log line: the CRC32 of the record's JSON, a space, the JSON, a newline."""
    body = _ENCODER.encode(record).encode()
    return b"%08x %s\n" % (zlib.crc32(body), body)


def _decode_line(line: bytes) -> dict | None:
    """The record of a whole, undamaged line, else None."""
    if not line.endswith(b"\n") or len(line) < 10 or line[8:9] != b" ":
        return None
    body = line[9:-1]
    try:
        if int(line[:8], 16) != zlib.crc32(body):
            return None
        record = json.loads(body)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _walk(path: Path, end: int | None = None) -> Iterator[tuple[dict | None, int]]:
    """Each whole record of the log (through byte end, if given) with the bytes through it;
    a torn last record (no newline: its write was cut short) is (None, the bytes before it),
    any other damaged record a DataError naming the file and the line."""
    good = 0
    with open(path, "rb") as f:
        lines = iter(f)
        for number, line in enumerate(lines, 1):
            record = _decode_line(line)
            if record is None:
                last = next(lines, None) is None
                if not last or line.endswith(b"\n"):
                    where = "is not the last" if not last else "was written whole"
                    raise DataError(f"{path}: record at line {number} is damaged and {where} "
                                    "(its checksum or JSON is wrong): acknowledged records "
                                    "may be lost; refusing to continue from this log (keep "
                                    "a copy; the records before that line are intact)")
                yield None, good
                return
            good += len(line)
            yield record, good
            if end is not None and good >= end:
                return


def _scan(path: Path, keep: list | None = None) -> tuple[int, int, bool]:
    """(records, bytes that hold them whole, whether a torn last record follows them); the
    records are appended to keep if given."""
    count = good = 0
    try:
        for record, good in _walk(path):
            if record is None:
                return count, good, True
            count += 1
            if keep is not None:
                keep.append(record)
    except FileNotFoundError:
        return 0, 0, False
    except OSError as e:
        raise OutputError(path, e, "read") from None
    return count, good, False


def read_records(path: Path) -> tuple[list[dict], int, bool]:
    """(records, bytes that hold them whole, whether a torn last record follows them)."""
    records: list[dict] = []
    _, good, torn = _scan(path, records)
    return records, good, torn


class LogRecords:
    """The records a log held when it was opened, read from its file each time they are
    walked: a service's log grows for months, and none of it is kept in memory."""

    def __init__(self, path: Path, end: int, count: int):
        self.path, self.end, self.count = path, end, count

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[dict]:
        if not self.end:
            return
        try:
            for record, _ in _walk(self.path, self.end):
                yield record
        except OSError as e:
            raise OutputError(self.path, e, "read") from None


def _settle(fut: Future, record: dict, error: BaseException | None) -> None:
    """Resolve fut unless its waiter gave up on it (cancelled)."""
    try:
        if error is None:
            fut.set_result(record)
        else:
            fut.set_exception(error)
    except InvalidStateError:
        pass


class WriteAheadLog:
    """An append-only, fsync'd, group-committed log of JSON records in a private file."""

    def __init__(self, path: Path, *, group_limit: int = 4096):
        self.path = Path(path)
        make_private_dir(self.path.parent)
        count, good, torn = _scan(self.path)
        #: the records read back at open (walked from the file, not held)
        self.records = LogRecords(self.path, good, count)
        self.dropped_torn_record = torn
        self._group_limit = group_limit
        self._fd = self._open_private(good, torn)
        self._pending: list[tuple[bytes, dict, Future, Callable[[dict], Any] | None]] = []
        self._cond = threading.Condition()
        self._closing = False
        self._broken: OutputError | None = None
        self.fsyncs = 0
        self.appended = 0
        self._thread = threading.Thread(target=self._commit_loop, name="wal-commit", daemon=True)
        self._thread.start()

    def _open_private(self, good: int, torn: bool) -> int:
        created = not self.path.exists()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as e:
            raise OutputError(self.path, e, "open the write-ahead log") from None
        mode = stat.S_IMODE(os.fstat(fd).st_mode)
        if mode & 0o077:
            os.close(fd)
            raise OutputError(self.path, f"others may read or write it (mode {mode:04o}); the "
                                         "log holds this organisation's requests: make it "
                                         "0600 or give another folder", "use as the log")
        if torn:
            log.warning("%s: the last record was cut short by a crash (never acknowledged): "
                        "dropped", self.path)
            os.ftruncate(fd, good)
            os.fsync(fd)
        if created:  # the new file's name must survive a crash as well as its records
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        return fd

    def append(self, record: dict, then: Callable[[dict], Any] | None = None) -> Future:
        """Queue record; the future resolves once it is on disk (after ``then(record)`` ran)."""
        line = encode_record(record)
        fut: Future = Future()
        with self._cond:
            if self._broken is not None:
                fut.set_exception(self._broken)
                return fut
            if self._closing:
                fut.set_exception(OutputError(self.path, "the log is closed", "append to"))
                return fut
            self._pending.append((line, record, fut, then))
            if len(self._pending) == 1:  # else the commit thread was told already, or is busy
                self._cond.notify()
        return fut

    def _commit_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._closing:
                    self._cond.wait()
                if not self._pending:
                    return
                group = self._pending[:self._group_limit]
                del self._pending[:len(group)]
            self._commit(group)

    def _commit(self, group: list) -> None:
        data = memoryview(b"".join(line for line, *_ in group))
        try:
            while data:
                data = data[os.write(self._fd, data):]
            os.fsync(self._fd)
        except OSError as e:
            # a partial write may have left half a record: nothing may follow it in the file
            error = OutputError(self.path, e, "append to the write-ahead log")
            log.error("%s; refusing every later append", error)
            with self._cond:
                self._broken = error
                failed = group + self._pending
                self._pending = []
            for _, record, fut, _ in failed:
                _settle(fut, record, error)
            return
        self.fsyncs += 1
        self.appended += len(group)
        for _, record, fut, then in group:
            # then runs whether or not anyone still waits: the record is durable
            error = None
            try:
                if then is not None:
                    then(record)
            except Exception as e:  # noqa: BLE001 - the record is durable; its caller is told
                error = e
            _settle(fut, record, error)

    @property
    def broken(self) -> OutputError | None:
        """The write error that stopped the log, if any."""
        return self._broken

    def close(self, deadline_s: float = 10.0) -> None:
        """Commit what is queued (waiting at most deadline_s), then close the file."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join(deadline_s)
        if self._thread.is_alive():
            log.error("%s: the log's last fsync did not finish within %g s", self.path,
                      deadline_s)
            return
        os.close(self._fd)
