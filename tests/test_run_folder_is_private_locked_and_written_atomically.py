"""The run folder: private (0700, files 0600), one run at a time (a second is refused naming
the holder, a dead holder's lock is taken over), and writes that fail name the file."""

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from deadlines import deadline
from mpcbandit.errors import MpcBanditError
from mpcbandit.files import OutputError, RunLock, make_private_dir, write_json
from partyprocs import start_run, wait_for_progress

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

REPO = Path(__file__).resolve().parents[1]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_cli(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(120))


def test_every_file_of_a_run_is_private(tmp_path):
    out = tmp_path / "run"
    done = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3", "--out", out)
    assert done.returncode == 0, done.stderr
    assert mode(out) == 0o700
    paths = [p for p in out.rglob("*")]
    assert {p.name for p in paths} >= {"summary.json", "run.json", "input.0.json",
                                       "input.0.log", "roster.json"}
    loose = {str(p.relative_to(out)): oct(mode(p)) for p in paths
             if mode(p) & (stat.S_IRWXG | stat.S_IRWXO)}
    assert loose == {}


def test_a_second_run_into_the_same_folder_is_refused_naming_the_holder(tmp_path):
    first = start_run("configs/demo-sum.toml", "--set", "demo.iterations=100000000", out=tmp_path)
    try:
        wait_for_progress(tmp_path / "progress", minimum=2)
        second = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3",
                         "--out", tmp_path)
        assert second.returncode != 0
        assert f"in use by another run (pid {first.pid}" in second.stderr, second.stderr
        assert first.poll() is None  # the first run is untouched
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(deadline(10))
    # the holder died without releasing: its lock is taken over
    third = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3", "--out", tmp_path)
    assert third.returncode == 0, third.stderr
    assert json.loads((tmp_path / "summary.json").read_text())["steps"] == 3


def test_lock_is_exclusive_within_and_released_after(tmp_path):
    with RunLock(tmp_path):
        with pytest.raises(MpcBanditError, match=f"pid {os.getpid()}"):
            RunLock(tmp_path).acquire()
    with RunLock(tmp_path):
        pass


def test_out_under_a_file_is_named(tmp_path):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    done = run_cli("run", "configs/demo-sum.toml", "--set", "demo.iterations=3",
                   "--out", blocker / "sub")
    assert done.returncode != 0
    assert f"{blocker} is a file, not a folder" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_unwritable_out_is_named(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    with pytest.raises(OutputError, match=str(ro)):
        make_private_dir(ro / "sub")


def test_a_failed_write_names_the_file_and_errno_and_leaves_the_old_file(tmp_path):
    target = tmp_path / "summary.json"
    write_json(target, {"ok": 1})
    # a file size limit stands in for a full disk (it binds root too): writes fail with EFBIG
    script = f"""
import resource, signal
from pathlib import Path
from mpcbandit.files import write_json, OutputError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
try:
    write_json(Path({str(target)!r}), {{"big": "x" * 100000}})
except OutputError as e:
    print(e)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True,
                          text=True, timeout=deadline(60),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert f"cannot write {target}" in done.stdout and "(EFBIG)" in done.stdout, done.stdout
    assert json.loads(target.read_text()) == {"ok": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary left


def test_non_finite_results_become_null_not_invalid_json(tmp_path):
    path = write_json(tmp_path / "r.json", {"regret": float("nan"), "x": [1.0, float("inf")]})
    assert json.loads(path.read_text()) == {"regret": None, "x": [1.0, None]}
    assert mode(path) == 0o600


def test_resume_from_a_damaged_run_json_is_named(tmp_path):
    (tmp_path / "run.json").write_text('{"config": "configs/demo-sum.toml"')
    done = run_cli("run", "--resume", tmp_path)
    assert done.returncode != 0
    assert f"{tmp_path / 'run.json'} is damaged" in done.stderr and "Traceback" not in done.stderr
