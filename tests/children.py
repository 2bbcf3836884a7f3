"""The processes the suite starts: each one stopped when the test that started it ends, however
it ends, and none left running when the session ends.

- popen(cmd, ...) is subprocess.Popen, in a process group of its own, remembered for the test
  that is running; conftest.py's Guard stops every one still running when that test ends
  (passed, failed or errored: after its fixtures' teardown), with stop(): SIGTERM, SIGKILL to
  the process and its group after a deadline. A helper may stop its processes sooner with
  stopping(...), a context manager.
- Every process the session starts carries MPCBANDIT_TEST_SESSION=<this session's id> in its
  environment (set in the controller before anything starts; children inherit it; a session a
  test starts adds its own id after it, so what that one leaves is still this one's). At the
  end the controller lists the processes still carrying it (marked(): /proc/*/environ), other
  than itself and its xdist workers, kills them and fails the session naming each one.

A process a module- or session-scoped fixture keeps running across tests must not come from
popen (it would be stopped when the first test that used it ends)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

from deadlines import deadline

SESSION_ENV = "MPCBANDIT_TEST_SESSION"
#: a process gets this long (x the slowness) to exit on SIGTERM before it is killed
STOP_GRACE_S = 10.0

#: the processes popen started during the running test (None outside a test)
_started: list[subprocess.Popen] | None = None


def popen(cmd, *, own_group: bool = True, **kw) -> subprocess.Popen:
    """subprocess.Popen(cmd, **kw) in a process group of its own (unless own_group is False or
    kw says otherwise), stopped with its group when the running test ends if it is still
    running then."""
    kw.setdefault("start_new_session", own_group)
    proc = subprocess.Popen(cmd, **kw)
    if _started is not None:
        _started.append(proc)
    return proc


def begin_test() -> None:
    """A test starts: nothing of its own runs yet."""
    global _started
    _started = []


def end_test() -> list[subprocess.Popen]:
    """The test ended: stop every process it started that still runs; those (stopped now)."""
    global _started
    procs, _started = _started or [], None
    running = [p for p in procs if p.poll() is None]
    stop_all(running)
    return running


def _leads_group(pid: int) -> bool:
    try:
        return os.getpgid(pid) == pid
    except OSError:
        return False


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_all(procs, grace_s: float = STOP_GRACE_S) -> None:
    """Stop every process of procs (Popen objects, or lists, tuples and dicts of them, nested):
    SIGTERM (and SIGCONT, so a stopped one takes it) to each still running; after
    deadline(grace_s) SIGKILL to each still there and to its process group where it leads one
    (what it started too); every one reaped and its pipes closed."""
    procs = list(_flatten(procs))
    groups = {p.pid for p in procs if p.poll() is None and _leads_group(p.pid)}
    for p in procs:
        if p.poll() is None:
            _signal(p.pid, signal.SIGTERM, False)
            _signal(p.pid, signal.SIGCONT, False)
    end = time.monotonic() + deadline(grace_s)
    for p in procs:
        try:
            p.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal(p.pid, signal.SIGKILL, p.pid in groups)
            p.wait()
        if p.pid in groups:  # what it left behind in its group (the group outlives its leader)
            _signal(p.pid, signal.SIGKILL, True)
        for pipe in (p.stdin, p.stdout, p.stderr):
            if pipe is not None:
                pipe.close()


def stop(proc: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int:
    """stop_all([proc]); its exit status."""
    stop_all([proc], grace_s)
    return proc.returncode


@contextmanager
def stopping(*procs):
    """`with stopping(procs): ...`: on leaving the block, however it is left, stop_all(procs)
    (a list or dict filled inside the block counts with what it holds then)."""
    try:
        yield procs[0] if len(procs) == 1 else procs
    finally:
        stop_all(procs)


@contextmanager
def stopping_unless_started(*procs):
    """`with stopping_unless_started(procs): wait until they serve`: stop_all(procs) if the
    block raises (the wait failed: they are stopped now, not when the test ends), else leave
    them running for the test."""
    try:
        yield procs[0] if len(procs) == 1 else procs
    except BaseException:
        stop_all(procs)
        raise


def _flatten(procs):
    if isinstance(procs, subprocess.Popen):
        yield procs
    elif isinstance(procs, dict):
        for p in procs.values():
            yield from _flatten(p)
    elif isinstance(procs, (list, tuple, set)):
        for p in procs:
            yield from _flatten(p)


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def marked(session: str, exclude=()) -> dict[int, tuple[str, str]]:
    """{pid: (command line, the test that was running when it started)} of every live process
    whose environment's SESSION_ENV (ids separated by spaces) holds session, but for the pids
    in exclude and this process. (/proc/PID/environ is the environment a process was started
    with: a process that set the marker for its children later, as the controller does, does
    not carry it.)"""
    prefix, session = f"{SESSION_ENV}=".encode(), session.encode()
    skip = {os.getpid(), *exclude}
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
            ids = next((e[len(prefix):].split() for e in env if e.startswith(prefix)), [])
            if session not in ids or not alive(int(entry.name)):
                continue
            argv = (entry / "cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        except OSError:  # gone meanwhile, or another user's
            continue
        test = next((e.split(b"=", 1)[1].decode(errors="replace") for e in env
                     if e.startswith(b"PYTEST_CURRENT_TEST=")), "no test running")
        found[int(entry.name)] = (" ".join(a.decode(errors="replace") for a in argv), test)
    return found


def kill_pids(pids, grace_s: float = 5.0) -> None:
    """SIGTERM (and SIGCONT) each pid; SIGKILL those alive after deadline(grace_s)."""
    for pid in pids:
        _signal(pid, signal.SIGTERM, False)
        _signal(pid, signal.SIGCONT, False)
    end = time.monotonic() + deadline(grace_s)
    while any(alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.05)
    for pid in pids:
        if alive(pid):
            _signal(pid, signal.SIGKILL, False)


def leftovers(session: str, exclude=(), settle_s: float = 2.0) -> dict[int, tuple[str, str]]:
    """marked(session, exclude) once those that were exiting had deadline(settle_s) to go
    (a party whose launcher was just killed gets its SIGKILL as the launcher dies); every one
    found is killed (kill_pids) before this returns."""
    end = time.monotonic() + deadline(settle_s)
    found = marked(session, exclude)
    while found and time.monotonic() < end:
        time.sleep(0.1)
        found = marked(session, exclude)
    kill_pids(list(found))
    return found
