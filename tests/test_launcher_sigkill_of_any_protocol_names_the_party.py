"""For every protocol on main, a central party SIGKILLed mid-run (and the dealer while it
serves): `mpcbandit run` exits non-zero within deadline + 5 s naming it, and no party process
survives."""

import signal
import time

import pytest

from deadlines import deadline, wait_for
from partyprocs import kill_party, party_pids, reap_check, start_run, wait_for_progress

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

DEADLINE_S = deadline(6.0)
LONG = "10000000"
MPCOPS = ["configs/mpc-ops.toml", "--set", 'mpcops.ops=["mul", "lt"]',
          "--set", "mpcops.repeats=100000", "--set", "mpcops.arms=[10]"]

# case -> (config and settings for a run far longer than the test, victim, parties)
CASES = {
    "demo": (["configs/demo-sum.toml", "--set", f"demo.iterations={LONG}"], "compute.0", 6),
    "mpcops": (MPCOPS, "compute.0", 3),
    "mpcops-dealer": (MPCOPS, "dealer.0", 3),
    "jdp": (["configs/jdp-synthetic.toml", "--set", f"jdp.horizon={LONG}"], "privatizer.0", 3),
    "feducb": (["configs/feducb-synthetic.toml", "--set", f"feducb.horizon={LONG}"],
               "controller.0", 5),
    "feducb-p2p": (["configs/feducb-p2p.toml", "--set", f"feducb.horizon={LONG}"], "agent.1", 4),
    "o3m": (["configs/o3m-synthetic.toml", "--set", f"o3m.iterations={LONG}"], "pp.1", 7),
    # four data owners and 512-bit keys, not ten and 2048: what is killed is the Controller
    "samba": (["configs/samba-synthetic.toml", "--set", f"samba.budget={LONG}", "--set",
               "samba.arms=4", "--set", "samba.paillier_bits=512", "--set",
               "samba.insecure_small_keys=true"], "controller.0", 7),
}


def wait_under_way(launcher, out, parties):
    """Until every party runs and (when the protocol reports progress) has made some."""
    end = time.monotonic() + deadline(60)
    while len(pids := party_pids(launcher.pid)) < parties and time.monotonic() < end:
        time.sleep(0.05)
    assert len(pids) == parties, pids
    if "mpc-ops" in launcher.args[4]:  # reports progress only at the end: wait on time
        time.sleep(2.0)
    else:
        wait_for_progress(out / "progress", minimum=3)
    assert launcher.poll() is None, "the run ended before a party could be killed"
    return pids


@pytest.mark.parametrize("case", sorted(CASES))
def test_sigkill_of_a_central_party_is_named_and_nothing_survives(tmp_path, case):
    args, victim, parties = CASES[case]
    launcher = start_run(*args, "--set", f"run.deadline_s={DEADLINE_S:g}", out=tmp_path)
    pids = wait_under_way(launcher, tmp_path, parties)
    err, elapsed = kill_party(launcher, pids[victim], signal.SIGKILL,
                              timeout=DEADLINE_S + deadline(5))
    assert launcher.returncode != 0
    assert elapsed <= DEADLINE_S + deadline(5)
    assert f"party '{victim}'" in err and "SIGKILL" in err, err
    wait_for(lambda: reap_check(pids.values()) == [], f"none of {sorted(pids)} left",
             deadline(5))
