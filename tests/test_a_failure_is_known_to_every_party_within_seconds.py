"""One party per process, no launcher (as on one host per organisation): when a party fails,
every survivor exits within seconds, not after run.deadline_s (60 s here), naming the party
that failed first and why. A killed party is found by its dropped connections; a party that
fails or is stopped says so (an abort message) and its peers pass it on; a config mismatch
names the party that refused, not the one left waiting."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.launch import pick_base_port
from mpcbandit.progress_file import read_progress

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

DEADLINE_S = deadline(60)
#: survivors must be gone well before the deadline: within this many seconds of the fault
PROMPTLY_S = deadline(20)


def _start_parties(tmp_path: Path, config: str, sets: list[str], extra: dict | None = None):
    """Every party of config as its own `mpcbandit party` process; {name: (proc, stderr file)}."""
    sets = [*sets, f"run.deadline_s={DEADLINE_S:g}", f"run.startup_s={DEADLINE_S:g}",
            f"network.base_port={pick_base_port('127.0.0.1', 16)}"]
    flags = [a for s in sets for a in ("--set", s)]
    env = dict(os.environ, PYTHONPATH=str(REPO))
    subprocess.run([sys.executable, "-m", "mpcbandit", "keys", config, *flags, "--out",
                    tmp_path / "keys"], cwd=REPO, env=env, check=True, capture_output=True)
    flags += ["--set", f'run.keys_dir="{tmp_path / "keys"}"']
    procs = {}
    for p in load_config(REPO / config, sets).parties():
        err = open(tmp_path / f"{p.name}.err", "w")
        cmd = [sys.executable, "-m", "mpcbandit", "party", config, "--role", p.role, "--index",
               str(p.index), *flags, *(extra or {}).get(p.name, []),
               "--progress", tmp_path / f"{p.name}.progress", "--result", tmp_path / f"{p.name}.json"]
        procs[p.name] = (popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                               stderr=err), tmp_path / f"{p.name}.err")
    return procs


def _wait_all_progress(tmp_path: Path, names, minimum: int) -> None:
    end = time.monotonic() + deadline(60)
    while time.monotonic() < end:
        got = [read_progress(tmp_path / f"{n}.progress") for n in names]
        if all(g is not None and g[0] >= minimum for g in got):
            return
        time.sleep(0.05)
    raise AssertionError(f"the parties never all reached iteration {minimum}")


def _exits(procs: dict, since: float, timeout: float) -> dict[str, tuple[int, float, str]]:
    """Wait (bounded) for every process; {name: (exit code, seconds after since, last line)}."""
    out = {}
    end = time.monotonic() + timeout
    while len(out) < len(procs) and time.monotonic() < end:
        for name, (proc, err) in procs.items():
            if name not in out and proc.poll() is not None:
                lines = [ln for ln in err.read_text().splitlines() if ln.strip()]
                out[name] = (proc.returncode, time.monotonic() - since, lines[-1] if lines else "")
        time.sleep(0.05)
    for proc, _ in procs.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return out


@pytest.mark.slow
def test_every_survivor_of_a_killed_feature_holder_names_it_within_seconds(tmp_path):
    procs = _start_parties(tmp_path, "configs/hannun-synthetic.toml", ["hannun.iterations=100000"])
    try:
        _wait_all_progress(tmp_path, ["feature_holder.0", "arm_puller.0"], minimum=20)
        victim = procs.pop("feature_holder.1")[0]
        victim.kill()
        t0 = time.monotonic()
        exits = _exits(procs, t0, timeout=DEADLINE_S + deadline(10))
    finally:
        victim.wait()
    assert set(exits) == set(procs), f"still running after the deadline: {set(procs) - set(exits)}"
    for name, (code, took, last) in exits.items():
        assert code != 0, (name, last)
        assert took < PROMPTLY_S, (name, took, last)
        assert "'feature_holder.1'" in last and ("party 'feature_holder.1' failed" in last
                                                 or "peer 'feature_holder.1' is gone" in last), (name, last)


@pytest.mark.slow
def test_a_stopped_party_tells_its_peers_why(tmp_path):
    procs = _start_parties(tmp_path, "configs/demo-sum.toml", ["demo.iterations=100000000"])
    _wait_all_progress(tmp_path, ["input.0", "output.0"], minimum=5)
    victim = procs.pop("compute.1")[0]
    victim.send_signal(signal.SIGTERM)
    exits = _exits(procs, time.monotonic(), timeout=DEADLINE_S + deadline(10))
    assert victim.wait(deadline(10)) != 0
    assert set(exits) == set(procs)
    for name, (code, took, last) in exits.items():
        assert code != 0 and took < PROMPTLY_S, (name, code, took, last)
        assert "party 'compute.1' failed: Stopped: stopped by SIGTERM" in last, (name, last)


@pytest.mark.slow
def test_a_config_mismatch_names_the_party_that_refused_not_the_one_left_waiting(tmp_path):
    # output.0 runs another vector length: the computing parties refuse it in the hello; the
    # input holders never talk to output.0 and would otherwise wait out their deadline
    procs = _start_parties(tmp_path, "configs/demo-sum.toml", ["demo.iterations=100000000"],
                           extra={"output.0": ["--set", "demo.length=9"]})
    exits = _exits(procs, time.monotonic(), timeout=DEADLINE_S + deadline(10))
    assert set(exits) == set(procs)
    for name, (code, took, last) in exits.items():
        assert code != 0 and took < PROMPTLY_S, (name, code, took, last)
        assert "runs a different config: demo.length" in last, (name, last)
    for name in ("input.0", "input.1"):
        last = exits[name][2]
        assert "party 'compute." in last and "from peer 'output.0'" in last, (name, last)
