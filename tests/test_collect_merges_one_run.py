"""`collect` builds the same summary.json as `run` from the parties' result files, and refuses
results that are not one complete run: missing, twice, failed, of another config, or of two
runs mixed."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
from deadlines import deadline
from mpcbandit.launch import pick_base_port

# the quick tier (-m "not slow") leaves it out; one worker runs the module, so its module
# fixture runs once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("collect")]

ENV = dict(os.environ, PYTHONPATH=str(REPO))
SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=3"]
NAMES = ["input.0", "input.1", "compute.0", "compute.1", "output.0"]


def cli(*args):
    return subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=deadline(120))


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """Two runs of one config (same ports, so the same digest) and their set options."""
    tmp = tmp_path_factory.mktemp("collect")
    sets = [*SETS, f"network.base_port={pick_base_port('127.0.0.1', 5)}"]
    args = [a for s in sets for a in ("--set", s)]
    for run in ("a", "b"):
        done = cli("run", "configs/demo-sum.toml", *args, "--out", tmp / run)
        assert done.returncode == 0, done.stderr
    return tmp, args


def results_of(folder):
    return [folder / "parties" / f"{n}.json" for n in NAMES]


def test_collect_writes_the_summary_run_wrote(two_runs, tmp_path):
    tmp, args = two_runs
    done = cli("collect", "configs/demo-sum.toml", *results_of(tmp / "a"), *args, "--out", tmp_path)
    assert done.returncode == 0, done.stderr
    mine = json.loads((tmp_path / "summary.json").read_text())
    theirs = json.loads((tmp / "a" / "summary.json").read_text())
    for key in ("protocol", "seed", "steps", "rounds_total", "sum", "digest", "parties"):
        assert key in mine and mine[key] == theirs[key], key


@pytest.mark.parametrize("case,expected", [
    ("missing", "no result for output.0"),
    ("twice", "two results for input.0"),
    ("mixed", "are of different runs"),
    ("other-config", "is of another config"),
    ("failed", "failed: PeerTimeout"),
    ("garbage", "is not readable JSON"),
])
def test_collect_refuses_what_is_not_one_run(two_runs, tmp_path, case, expected):
    tmp, args = two_runs
    files = results_of(tmp / "a")
    if case == "missing":
        files = files[:-1]
    elif case == "twice":
        files = [*files, files[0]]
    elif case == "mixed":
        files = [*files[:-1], results_of(tmp / "b")[-1]]
    elif case == "other-config":
        args = [*args, "--set", "demo.length=9"]
    elif case in ("failed", "garbage"):
        bad = tmp_path / "output.0.json"
        shutil.copy(files[-1], bad)
        bad.write_text('{"role": "output", "index": 0, "error": "PeerTimeout: no message"}'
                       if case == "failed" else "{not json")
        files = [*files[:-1], bad]
    done = cli("collect", "configs/demo-sum.toml", *files, *args, "--out", tmp_path / "out")
    assert done.returncode != 0
    assert expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out" / "summary.json").exists()
