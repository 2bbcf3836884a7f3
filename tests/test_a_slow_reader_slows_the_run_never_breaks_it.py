"""The demo of issue 49: input holders finish 2,000 messages of 16 KB ahead of their readers on an emulated
network; one computing party is then frozen for 6 s. The input holders wait at their close
until everything they sent was read, and the run completes with the right sums (it failed,
blaming an input holder that had done its part, when they exited after a 2 s linger)."""

import json
import os
import signal
import time

import pytest

from deadlines import deadline
from mpcbandit.progress_file import read_progress
from partyprocs import party_pids, start_run

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

ITERATIONS = 2000


def _progress(out, name):
    got = read_progress(out / "progress" / name)
    return got[0] if got else 0


@pytest.mark.slow
def test_input_holders_done_first_wait_for_a_frozen_reader_and_the_run_completes(tmp_path):
    launcher = start_run("configs/demo-sum.toml", "--set", f"demo.iterations={ITERATIONS}",
                         # 40 Mbit/s: 3.2 ms a 16 KB message, so the readers lag the writers
                         "--set", "demo.length=2000", "--net", "one_way_ms=3,mbit_s=40",
                         "--no-estimate",
                         out=tmp_path)
    try:
        end = time.monotonic() + deadline(60)
        while _progress(tmp_path, "input.0") < ITERATIONS and time.monotonic() < end:
            time.sleep(0.05)
        assert _progress(tmp_path, "input.0") == ITERATIONS, "the input holders never finished"
        pids = party_pids(launcher.pid)
        assert _progress(tmp_path, "compute.0") < ITERATIONS  # its reader is far behind
        victim = pids["compute.0"]
        os.kill(victim, signal.SIGSTOP)
        time.sleep(6.0)
        os.kill(victim, signal.SIGCONT)
        out, err = launcher.communicate(timeout=deadline(120))
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 0, err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["matches_plaintext"] is True and summary["steps"] == ITERATIONS
    closes = {f"{p['role']}.{p['index']}": p["close_s"] for p in summary["parties"]}
    assert closes["input.0"] > 1.0  # it waited at its close for the frozen reader
