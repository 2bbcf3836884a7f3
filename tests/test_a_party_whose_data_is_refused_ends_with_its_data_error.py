"""A party whose own data is refused, started before its peers (or alone), ends within seconds
with its DataError (file, row, column) as the last thing it prints: it tells the peers that
greet it (test_parties_agree_on_their_data_in_the_hello.py), but does not wait out
run.startup_s for peers that are not there and end on their PeerTimeout instead."""

import os
import subprocess
import sys
import time

from conftest import REPO
from datafolders import edit
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.launch import pick_base_port
from serve_support import DEADLINE_S

SETS = ['run.security="none"', "demo.iterations=2", "demo.length=4"]


def test_a_party_alone_on_a_refused_folder_ends_promptly_on_its_data_error(tmp_path):
    write_split(load_config(REPO / "configs/demo-sum.toml", SETS), tmp_path / "data")
    table = tmp_path / "data" / "input.0" / "inputs.csv"
    edit(table, lambda rows: rows[1].__setitem__(1, "abc"))
    sets = [*SETS, f"network.base_port={pick_base_port('127.0.0.1', 6)}",
            f"run.startup_s={2 * DEADLINE_S:g}"]  # longer than the test waits: not waited out
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "mpcbandit", "party", "demo-sum", "--role", "input", "--index", "0",
         "--data", str(table.parent), *[a for s in sets for a in ("--set", s)]],
        cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
        timeout=DEADLINE_S)
    assert done.returncode == 1, done.stderr[-1500:]
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"mpcbandit party input.0 failed: DataError: {table}: row 1, column 'v0': "
                    "'abc' is not an integer in [0, 2^64)"), done.stderr[-1500:]
    assert "PeerTimeout" not in done.stderr
    # the peers it did not tell are named in its log, before its last word
    assert "no hello from compute.0, compute.1 within" in done.stderr
    assert time.monotonic() - started < DEADLINE_S / 2
