"""A party frozen or killed mid-run: `mpcbandit run` names it, exits non-zero within deadline + 5 s,
and no party process survives."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import REPO
from partyprocs import party_pids, reap_check, wait_for_progress

DEADLINE_S = 6.0


def start_long_demo(out):
    return subprocess.Popen(
        [sys.executable, "-m", "mpcbandit", "run", "configs/demo-sum.toml", "--out", str(out),
         "--set", "demo.iterations=100000000", "--set", f"run.deadline_s={DEADLINE_S}"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


# SIGKILL of a party of every protocol: test_launcher_sigkill_of_any_protocol_names_the_party.py
@pytest.mark.parametrize("sig,victim,reason", [
    (signal.SIGSTOP, "compute.0", "no message from peer 'compute.0'"),
])
def test_a_frozen_party_is_named_and_nothing_survives(tmp_path, sig, victim, reason):
    launcher = start_long_demo(tmp_path)
    try:
        wait_for_progress(tmp_path / "progress", minimum=5)
        pids = party_pids(launcher.pid)
        assert len(pids) == 6, pids
        t0 = time.monotonic()
        os.kill(pids[victim], sig)
        _, err = launcher.communicate(timeout=DEADLINE_S + 5)
        elapsed = time.monotonic() - t0
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode != 0
    assert elapsed <= DEADLINE_S + 5
    assert reason in err, err
    if sig == signal.SIGKILL:
        assert f"party '{victim}'" in err
    time.sleep(0.2)
    assert reap_check(pids.values()) == []


def test_killing_the_launcher_takes_its_parties_down(tmp_path):
    launcher = start_long_demo(tmp_path)
    try:
        wait_for_progress(tmp_path / "progress", minimum=2)
        pids = party_pids(launcher.pid)
        launcher.kill()
        launcher.wait(5)
        end = time.monotonic() + 5
        while reap_check(pids.values()) and time.monotonic() < end:
            time.sleep(0.05)
        assert reap_check(pids.values()) == []
    finally:
        if launcher.poll() is None:
            launcher.kill()


def test_dealer_killed_while_serving_is_named_and_nothing_survives(tmp_path):
    launcher = subprocess.Popen(
        [sys.executable, "-m", "mpcbandit", "run", "configs/mpc-ops.toml", "--out", str(tmp_path),
         "--set", 'mpcops.ops=["mul", "lt"]', "--set", "mpcops.repeats=100000",
         "--set", "mpcops.arms=[10]", "--set", f"run.deadline_s={DEADLINE_S}"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 60
        while len(pids := party_pids(launcher.pid)) < 3 and time.monotonic() < end:
            time.sleep(0.05)
        time.sleep(2.0)  # the computing parties are mid-way through their calls
        assert launcher.poll() is None, "the run ended before the dealer could be killed"
        os.kill(pids["dealer.0"], signal.SIGKILL)
        _, err = launcher.communicate(timeout=DEADLINE_S + 5)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode != 0
    assert "party 'dealer.0'" in err and "SIGKILL" in err, err
    time.sleep(0.2)
    assert reap_check(pids.values()) == []
