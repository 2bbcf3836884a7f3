"""A run that stops moving is stopped by the launcher with the lagging party named, never left
spinning: every party frozen at once (no receive deadline can fire), or past run.max_wall_s."""

import os
import signal

from deadlines import deadline, wait_for
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
    # stall limit = startup_s + 4 x deadline_s = 10 + 4 = 14 s (x the machine's slowness); a
    # startup_s of 1 s was too short for six parties' hello on a machine at load 6
    launcher = start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000",
                         "--set", f"run.deadline_s={deadline(1.0):g}",
                         "--set", f"run.startup_s={deadline(10.0):g}", out=tmp_path)
    every = ("input.0", "input.1", "input.2", "compute.0", "compute.1", "output.0")
    wait_for_progress(tmp_path / "progress", minimum=3, parties=every)
    pids = party_pids(launcher.pid)
    for pid in pids.values():
        # frozen together, no party's receive can time out: only the launcher can end this
        os.kill(pid, signal.SIGSTOP)
    err, rc = finish(launcher, timeout=deadline(60))
    assert rc != 0
    assert "no party progressed" in err and "run.startup_s + 4 x run.deadline_s" in err, err
    assert "stuck at iteration" in err and "(stopped)" in err, err
    assert any(f"party '{name}' failed" in err for name in pids), err
    wait_for(lambda: reap_check(pids.values()) == [], f"none of {sorted(pids)} left",
             deadline(5))


def test_a_run_past_its_wall_cap_is_stopped_naming_the_cap(tmp_path):
    cap = deadline(2.0)
    launcher = start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000",
                         "--set", f"run.max_wall_s={cap:g}", out=tmp_path)
    err, rc = finish(launcher, timeout=deadline(90))
    assert rc != 0
    assert f"run.max_wall_s = {cap:g} s" in err and "stuck " in err, err
    assert "summary.json" not in err
