"""`run` takes its folder's lock before the duration probes and holds it to the end, so a
second run started meanwhile is refused naming the live first; a finished run's folder is
refused as finished (not as in use by a process long gone), for a new run and for --resume."""

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from deadlines import deadline
from partyprocs import start_run

REPO = Path(__file__).resolve().parents[1]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(120))


def wait_for_line(proc: subprocess.Popen, text: str, timeout: float | None = None) -> str:
    """The first line of proc's stdout that holds text (a reader thread: no read blocks us),
    within timeout (a deadline(...): deadline(60) if None)."""
    timeout = deadline(60) if timeout is None else timeout
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout], daemon=True).start()
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            line = lines.get(timeout=0.1)
        except queue.Empty:
            if proc.poll() is not None:
                break
            continue
        if text in line:
            return line
    raise AssertionError(f"{text!r} not printed (exit {proc.poll()}): {proc.stderr.read()}")


def test_a_run_started_during_the_probes_is_refused_naming_the_prober(tmp_path):
    out = tmp_path / "run"
    first = start_run("configs/demo-sum.toml", "--net", "one_way_ms=1",
                      "--set", "demo.iterations=100000", out=out)
    try:
        wait_for_line(first, "estimating the duration")
        second = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3",
                         "--out", out)
        assert second.returncode != 0
        assert f"in use by another run (pid {first.pid}" in second.stderr, second.stderr
        assert not (out / "summary.json").exists()
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGINT)  # the launcher stops its probes' parties and cleans up
        try:
            first.wait(deadline(30))
        except subprocess.TimeoutExpired:
            first.kill()
            first.wait()


def test_a_finished_runs_folder_is_refused_as_finished(tmp_path):
    out = tmp_path / "run"
    done = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3", "--out", out)
    assert done.returncode == 0, done.stderr
    summary = (out / "summary.json").read_bytes()
    for again in (run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=4",
                          "--out", out),
                  run_cli("run", "--resume", out)):
        assert again.returncode != 0
        assert f"{out} already holds a finished run" in again.stderr, again.stderr
        assert "in use" not in again.stderr and "Traceback" not in again.stderr
    assert (out / "summary.json").read_bytes() == summary
