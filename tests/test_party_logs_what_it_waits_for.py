"""A party says who it is, where it binds, whom it waits for (with the time left), its
progress with rate and ETA, and its end; strings a peer controls are shown escaped."""

import os
import subprocess
import sys

from conftest import REPO
from deadlines import deadline
from mpcbandit.errors import ProtocolError, printable
from mpcbandit.launch import pick_base_port
from mpcbandit.protocols import progress_line


def test_a_party_started_alone_says_whom_it_waits_for(tmp_path):
    port = pick_base_port("127.0.0.1", 5)
    done = subprocess.run(
        [sys.executable, "-m", "mpcbandit", "party", "configs/demo-sum.toml", "--role", "compute",
         "--index", "0", "--set", f"network.base_port={port}", "--set", 'run.security="none"',
         "--set", "run.startup_s=6"],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
        timeout=deadline(60))
    assert done.returncode != 0
    err = done.stderr
    assert f"binding tcp://127.0.0.1:{port + 3}" in err, err
    assert "waiting for hello from input.0, input.1, input.2, output.0 (6 s left)" in err, err
    assert err.count("waiting for hello from") >= 2, err  # repeated while it waits
    assert "no message from peer 'input.0, input.1, input.2, output.0' with tag 'hello'" in err


def test_progress_line_has_rate_elapsed_and_eta():
    assert progress_line(50, 60, 110, 10.0) == "iteration 60/110, 5 it/s, elapsed 0:10, ETA 0:10"
    assert progress_line(0, 0, None, 0.0) == "iteration 0/?, elapsed 0:00"
    assert progress_line(0, 16, 100, 0.0) == "iteration 16/100, elapsed 0:00"  # no "0 it/s" first
    assert progress_line(10, 10, 10, 3725.0).endswith("elapsed 1:02:05")


def test_peer_controlled_strings_are_escaped():
    e = ProtocolError("in\x1b[31mput.0\n", "tag\r\x00", "declares routing id 'x\x07'")
    text = str(e)
    assert text.isprintable(), text
    assert "\\x1b[31m" in text and "\\r\\x00" in text and "\\x07" in text
    assert printable("a" * 500).endswith("...(500 chars)")
