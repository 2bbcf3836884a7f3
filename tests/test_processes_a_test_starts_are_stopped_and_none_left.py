"""A process a test starts is stopped when the test ends, however it ends (tests/children.py:
SIGTERM, SIGKILL with its process group after a deadline), and a session that still finds a
process of its own running at its end kills it and fails, naming it."""

import os
import signal
import subprocess
import sys
import uuid

import pytest

from children import SESSION_ENV, alive, marked, popen, stop, stopping
from conftest import REPO
from deadlines import ENV, deadline, wait_for

SLEEPER = [sys.executable, "-c", "import time; time.sleep(300)"]
#: a sleeper that says when it runs (its environment is its own from then on)
READY_SLEEPER = [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(300)"]
#: a shell that starts a sleeper in the background, says its pid and waits for it
WITH_A_CHILD = ["sh", "-c", "sleep 300 & echo $!; wait"]


def test_a_helpers_process_and_its_group_are_stopped_when_its_block_raises():
    with pytest.raises(RuntimeError, match="the test's body failed"):
        with stopping(popen(WITH_A_CHILD, stdout=subprocess.PIPE, text=True)) as shell:
            grandchild = int(shell.stdout.readline())
            assert alive(grandchild)
            raise RuntimeError("the test's body failed")
    assert shell.poll() is not None
    # killed with its group (the kill lands as it is next scheduled)
    wait_for(lambda: not alive(grandchild), "the process the helper's process started stops")


def test_stopping_stops_what_a_list_holds_when_the_block_is_left():
    procs = {}
    with pytest.raises(KeyError):
        with stopping(procs):
            procs["a"] = popen(SLEEPER)
            procs["b"] = (popen(SLEEPER), "its log")
            raise KeyError("b")
    assert procs["a"].poll() is not None and procs["b"][0].poll() is not None


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace():
    stubborn = popen([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
                      "signal.SIG_IGN); print('ready', flush=True); time.sleep(300)"],
                     stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout.readline() == "ready\n"
    assert stop(stubborn, grace_s=0.5) == -signal.SIGKILL


def test_the_leftover_scan_finds_a_child_with_the_session_mark_and_not_one_without():
    session = uuid.uuid4().hex  # not this session's: its own scan never sees these
    with_mark = popen(READY_SLEEPER, env={**os.environ, SESSION_ENV: f"outer {session}"},
                      stdout=subprocess.PIPE, text=True)
    without = popen(READY_SLEEPER, env={k: v for k, v in os.environ.items() if k != SESSION_ENV},
                    stdout=subprocess.PIPE, text=True)
    with stopping(with_mark, without):
        assert with_mark.stdout.readline() == without.stdout.readline() == "ready\n"
        found = marked(session)
        assert list(found) == [with_mark.pid]
        cmd, test = found[with_mark.pid]
        assert cmd == " ".join(READY_SLEEPER)
        assert test.startswith(f"tests/{os.path.basename(__file__)}::test_the_leftover_scan")
        assert marked(session, exclude={with_mark.pid}) == {}
        assert marked("outer") and not marked(session[:8])  # ids are whole words


def _session(tmp_path, body: str, *args):
    """A pytest session under the suite's conftest (its Guard) over one test file, in tmp_path;
    the pid the test wrote to tmp_path/pid."""
    (tmp_path / "test_it.py").write_text(
        "import os, subprocess, sys\nimport children\n"
        f"SLEEPER = {SLEEPER!r}\nPID = {str(tmp_path / 'pid')!r}\n" + body)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO)]))
    env[ENV] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p",
                           "no:cacheprovider", *args, "test_it.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=deadline(120))
    return done, int((tmp_path / "pid").read_text())


def test_a_process_a_failing_test_started_is_stopped_when_the_test_ends(tmp_path):
    done, pid = _session(tmp_path, """
def test_fails():
    proc = children.popen(SLEEPER)
    open(PID, "w").write(str(proc.pid))
    assert False, "the test failed"
""")
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout + done.stderr
    assert "left running" not in done.stdout  # stopped at the test's end, not the session's
    assert not alive(pid)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["no-xdist", "xdist"])
def test_a_session_that_leaves_a_process_running_kills_it_and_fails_naming_it(tmp_path, workers):
    done, pid = _session(tmp_path, """
def test_leaves_one():
    proc = subprocess.Popen(SLEEPER)   # not children.popen: nobody stops it
    open(PID, "w").write(str(proc.pid))

def test_passes():
    pass
""", *workers)
    try:
        assert done.returncode == 1, done.stdout + done.stderr
        assert "2 passed, 1 left running" in done.stdout
        assert (f"pid {pid} (started during test_it.py::test_leaves_one (call)): "
                f"{' '.join(SLEEPER)}") in done.stdout
        assert done.stdout.count("pid ") == 1  # neither pytest nor its workers
        assert not alive(pid)
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_a_session_that_leaves_nothing_passes(tmp_path):
    done, pid = _session(tmp_path, """
def test_stops_its_own():
    proc = children.popen(SLEEPER)
    open(PID, "w").write(str(proc.pid))
    assert children.stop(proc) == -15
""", "-n", "2")
    assert done.returncode == 0 and "left running" not in done.stdout, done.stdout + done.stderr
    assert not alive(pid)
