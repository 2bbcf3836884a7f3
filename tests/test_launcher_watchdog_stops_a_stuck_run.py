"""A run that stops moving is stopped by the launcher with the lagging party named, never left
spinning: every party frozen at once (no receive deadline can fire), or past run.max_wall_s."""

import os
import signal
import time

from partyprocs import party_pids, reap_check, start_run, wait_for_progress


def finish(launcher, timeout):
    """(stderr, returncode) of the launcher, killed if it outlives timeout."""
    try:
        _, err = launcher.communicate(timeout=timeout)
    except Exception:
        launcher.kill()
        _, err = launcher.communicate()
    return err, launcher.returncode


def test_every_party_frozen_is_stopped_after_the_stall_limit(tmp_path):
    # stall limit = startup_s + 4 x deadline_s = 1 + 4 = 5 s
    launcher = start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000",
                         "--set", "run.deadline_s=1.0", "--set", "run.startup_s=1.0",
                         out=tmp_path)
    every = ("input.0", "input.1", "input.2", "compute.0", "compute.1", "output.0")
    wait_for_progress(tmp_path / "progress", minimum=3, parties=every)
    pids = party_pids(launcher.pid)
    for pid in pids.values():
        # frozen together, no party's receive can time out: only the launcher can end this
        os.kill(pid, signal.SIGSTOP)
    err, rc = finish(launcher, timeout=60)
    assert rc != 0
    assert "no party progressed" in err and "run.startup_s + 4 x run.deadline_s" in err, err
    assert "stuck at iteration" in err and "(stopped)" in err, err
    assert any(f"party '{name}' failed" in err for name in pids), err
    end = time.monotonic() + 5
    while reap_check(pids.values()) and time.monotonic() < end:
        time.sleep(0.05)
    assert reap_check(pids.values()) == []


def test_a_run_past_its_wall_cap_is_stopped_naming_the_cap(tmp_path):
    launcher = start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000",
                         "--set", "run.max_wall_s=2.0", out=tmp_path)
    err, rc = finish(launcher, timeout=90)
    assert rc != 0
    assert "run.max_wall_s = 2 s" in err and "stuck " in err, err
    assert "summary.json" not in err
