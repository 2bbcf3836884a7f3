"""Ctrl-C on `mpcbandit run` says where the run's folder is and the `--resume` command that
continues it, with its iteration, or why the run cannot be resumed (never a bare "Aborted!")."""

import json
import os
import re
import signal
import subprocess
import sys
import time

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.interrupted import interrupted_note
from mpcbandit.launch import common_checkpoint
from partyprocs import alive, party_pids, wait_for_progress

DEMO = ["configs/demo-sum.toml", "--steps", "1000000", "--set", "demo.length=8"]
NAMES = [p.name for p in load_config(REPO / "configs" / "demo-sum.toml").parties()]


def as_a_terminal_starts_it() -> None:
    """In the child: SIGINT handled by default, as an interactive shell leaves it for a job in
    the foreground. A program inherits an ignored SIGINT (and Python then keeps ignoring it), and
    a test worker's process may have come to ignore it: a full suite once saw Ctrl-C ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def start(*args, out):
    """`mpcbandit run ARGS --out OUT` in its own process group, as a terminal starts it."""
    return popen([sys.executable, "-m", "mpcbandit", "run", *args, "--out", str(out)],
                 cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                 start_new_session=True, preexec_fn=as_a_terminal_starts_it)


def interrupt(launcher, group: bool) -> str:
    """SIGINT to the launcher (or its whole group, as Ctrl-C does); its stderr once it ended."""
    parties = list(party_pids(launcher.pid).values())
    (os.killpg if group else os.kill)(launcher.pid, signal.SIGINT)
    try:
        _, err = launcher.communicate(timeout=deadline(60))
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()
    assert not [p for p in parties if alive(p)], "a party outlived the interrupted launcher"
    return err


def wait_for_common_checkpoint(out) -> None:
    end = time.monotonic() + deadline(60)
    while time.monotonic() < end:
        try:
            common_checkpoint(out, NAMES)
            return
        except MpcBanditError:
            time.sleep(0.05)
    raise AssertionError(f"no iteration checkpointed by every party in {out}")


def test_ctrl_c_names_the_folder_and_the_resume_command_with_its_iteration(tmp_path):
    out = tmp_path / "run"
    launcher = start(*DEMO, "--checkpoint-every", "20", out=out)
    wait_for_common_checkpoint(out)
    err = interrupt(launcher, group=True)
    assert launcher.returncode == 130 and "Aborted!" not in err, err
    assert f"the run's folder is {out}" in err, err
    said = re.search(rf"`mpcbandit run --resume {re.escape(str(out))}` continues it from "
                     r"iteration (\d+)", err)
    assert said, err
    assert int(said[1]) == common_checkpoint(out, NAMES)  # where --resume starts


def test_ctrl_c_without_checkpoints_says_the_run_cannot_be_resumed_and_why(tmp_path):
    out = tmp_path / "run"
    launcher = start(*DEMO, out=out)
    wait_for_progress(out / "progress", minimum=10)
    err = interrupt(launcher, group=False)
    assert launcher.returncode == 130 and "Aborted!" not in err, err
    assert f"the run's folder is {out}" in err
    assert "cannot be resumed: it saved no checkpoints" in err and "--checkpoint-every" in err


def test_a_protocol_that_cannot_checkpoint_is_named_with_its_reason(tmp_path):
    config = (REPO / "configs" / "mpc-ops.toml").resolve()
    (tmp_path / "run.json").write_text(json.dumps({"config": str(config), "overrides": [],
                                                   "checkpoint_every": 0, "run_id": "x"}))
    note = interrupted_note(tmp_path)
    assert str(tmp_path) in note and "protocol mpcops cannot checkpoint" in note


def test_a_folder_without_a_run_says_there_is_nothing_to_resume(tmp_path):
    assert "cannot be resumed: it holds no run.json" in interrupted_note(tmp_path)
    assert "before the run started" in interrupted_note(None)
