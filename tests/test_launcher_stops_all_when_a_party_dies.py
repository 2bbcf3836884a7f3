"""A party frozen mid-run, or the launcher itself killed: every party stops, the culprit is
named, nothing survives. (SIGKILL of a party of every protocol:
test_launcher_sigkill_of_any_protocol_names_the_party.py.)"""

import re
import signal

from deadlines import deadline, wait_for
from partyprocs import kill_party, party_pids, reap_check, start_run, wait_for_progress

DEADLINE_S = deadline(6.0)


def start_long_demo(out):
    return start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000",
                     "--set", f"run.deadline_s={DEADLINE_S:g}", out=out)


def test_a_frozen_party_is_named_and_nothing_survives(tmp_path):
    launcher = start_long_demo(tmp_path)
    wait_for_progress(tmp_path / "progress", minimum=5)
    pids = party_pids(launcher.pid)
    assert len(pids) == 6, pids
    err, elapsed = kill_party(launcher, pids["compute.0"], signal.SIGSTOP,
                              timeout=DEADLINE_S + deadline(5))
    assert launcher.returncode != 0
    assert elapsed <= DEADLINE_S + deadline(5)
    # whoever gave up first, the blame is followed to the frozen party
    assert "party 'compute.0' failed" in err and "sent nothing (stopped)" in err, err
    assert "which waited for compute.0" in err or "which was told of compute.0" in err, err
    # a reader waiting on it, or a sender whose messages it stopped reading, timed out first
    assert re.search(r"PeerTimeout: (no message from peer|peer) 'compute\.0'", err), err
    wait_for(lambda: reap_check(pids.values()) == [], f"none of {sorted(pids)} left",
             deadline(5))


def test_killing_the_launcher_takes_its_parties_down(tmp_path):
    launcher = start_long_demo(tmp_path)
    try:
        wait_for_progress(tmp_path / "progress", minimum=2)
        pids = party_pids(launcher.pid)
        launcher.kill()
        launcher.wait(deadline(5))
        wait_for(lambda: reap_check(pids.values()) == [], f"none of {sorted(pids)} left",
                 deadline(5))
    finally:
        if launcher.poll() is None:
            launcher.kill()
