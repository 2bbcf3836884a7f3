"""Find and watch the party processes a launcher started (for fault tests)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from children import popen
from deadlines import deadline
from mpcbandit.progress_file import read_progress


def children(pid: int) -> list[int]:
    """Direct children of pid."""
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def party_pids(launcher_pid: int) -> dict[str, int]:
    """{'role.index': pid} of the launcher's party processes."""
    found = {}
    for pid in children(launcher_pid):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--role" in argv:
            role = argv[argv.index(b"--role") + 1].decode()
            index = argv[argv.index(b"--index") + 1].decode()
            found[f"{role}.{index}"] = pid
    return found


def alive(pid: int) -> bool:
    """True while pid exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_for_progress(progress_dir: Path, minimum: int, timeout: float | None = None,
                      parties: tuple[str, ...] = ()) -> None:
    """Wait until every party that reports progress (and each of `parties`, which may start
    late on a loaded machine) reported at least `minimum` iterations (a deadline(...) timeout:
    deadline(120) if None)."""
    end = time.monotonic() + (deadline(120) if timeout is None else timeout)
    while time.monotonic() < end:
        its = {}
        for f in progress_dir.glob("*"):
            got = read_progress(f)
            if got is not None and got[1] > 1:  # one-shot parts (a mask generator) don't count
                its[f.name] = got[0]
        if (its and min(its.values()) >= minimum and len(its) >= 2
                and all(its.get(p, -1) >= minimum for p in parties)):
            return
        time.sleep(0.05)
    raise AssertionError(f"no progress >= {minimum} in {progress_dir}")


def reap_check(pids) -> list[int]:
    """The pids that are still alive."""
    return [p for p in pids if alive(p) and p != os.getpid()]


def start_run(*args, out: Path | None) -> subprocess.Popen:
    """`mpcbandit run ARGS --out OUT` (out None: `run ARGS`, e.g. `--resume DIR`) as a child
    process with the repo on its path."""
    repo = Path(__file__).resolve().parents[1]
    where = [] if out is None else ["--out", str(out)]
    return popen([sys.executable, "-m", "mpcbandit", "run", *map(str, args), *where],
                 cwd=repo, env=dict(os.environ, PYTHONPATH=str(repo)),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def kill_party(launcher: subprocess.Popen, pid: int, sig: int, timeout: float) -> tuple[str, float]:
    """Send sig to a party, wait for the launcher to end; its stderr and the seconds it took.

    The launcher is killed if it outlives timeout (a deadline(...); the test then fails on its
    return code).
    """
    t0 = time.monotonic()
    try:
        os.kill(pid, sig)
        _, err = launcher.communicate(timeout=timeout)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
            err = ""
    return err, time.monotonic() - t0


def kill_and_resume(cli, config: str, args: list, out: Path, victim: str, *, every: int,
                    kill_after: int, timeout: float | None = None, then: tuple = ()) -> dict:
    """Run config with args checkpointing every `every` iterations, SIGKILL victim once every
    party is past kill_after, check that the run failed naming it and left no summary, resume
    it with `run --resume`; the resumed run's summary. then: more (victim, kill_after), each
    killed the same way in the run resumed before it. timeout: the launcher's to end after a
    kill (a deadline(...): deadline(30) if None)."""
    timeout = deadline(30) if timeout is None else timeout
    launcher = start_run(config, *args, "--checkpoint-every", every, out=out)
    kills = [(victim, kill_after), *then]
    for k, (who, after) in enumerate(kills):
        wait_for_progress(out / "progress", minimum=after,
                          timeout=max(deadline(120), 2 * timeout))
        err, _ = kill_party(launcher, party_pids(launcher.pid)[who], signal.SIGKILL,
                            timeout=timeout)
        assert launcher.returncode != 0 and who in err, err
        assert not (out / "summary.json").exists()
        if k + 1 < len(kills):
            launcher = start_run("--resume", out, out=None)
    cli("run", "--resume", out)
    return json.loads((out / "summary.json").read_text())


def assert_same_cost_per_step(resumed: dict, whole: dict, rel: float = 0.1) -> None:
    """A resumed run's per-step figures (its resumed part's counters over that part's steps)
    equal an uninterrupted run's, but for set-up spread over fewer steps: its share is a few %
    on the 100-200 steps the resumed part of these tests counts, while a figure divided by the
    wrong steps is off by the whole run over its resumed part (2x and more)."""
    for key in ("rounds_per_step", "bytes_per_step", "hops_per_step"):
        assert resumed[key] == pytest.approx(whole[key], rel=rel), (key, resumed[key], whole[key])
    assert resumed["counted_steps"] == resumed["steps"] - resumed["resumed_from"]
