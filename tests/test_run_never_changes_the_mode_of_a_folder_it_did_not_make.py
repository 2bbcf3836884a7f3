"""`run --out` at an existing folder: its mode is never changed. An empty folder of ours is
used as it is; a folder that holds anything but an mpcbandit run, or that others may write in
or own, is refused by name before anything is written (`--out /tmp`, `--out .`, `--out ~`)."""

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from deadlines import deadline
from mpcbandit.files import OutputError, claim_run_folder

REPO = Path(__file__).resolve().parents[1]


def run_into(out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpcbandit", "run", "configs/demo-sum.toml",
                           "--set", "demo.iterations=3", "--out", str(out)], cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(120))


def folder(path: Path, mode: int, *files: str) -> Path:
    path.mkdir()
    for name in files:
        (path / name).write_text("theirs\n")
    os.chmod(path, mode)  # after the files: mkdir's mode passes through the umask
    return path


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_an_empty_folder_of_ours_is_used_and_keeps_its_mode(tmp_path):
    out = folder(tmp_path / "mine", 0o755)
    done = run_into(out)
    assert done.returncode == 0, done.stderr
    assert mode(out) == 0o755
    assert (out / "summary.json").exists()
    # what the run writes in it is private all the same
    loose = [str(p) for p in out.rglob("*") if mode(p) & (stat.S_IRWXG | stat.S_IRWXO)]
    assert loose == []


def test_a_shared_sticky_folder_like_tmp_is_refused_and_keeps_its_mode(tmp_path):
    shared = folder(tmp_path / "tmp", 0o1777, "someone-elses.txt")
    done = run_into(shared)
    assert done.returncode != 0
    assert f"cannot use as the run folder {shared}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert mode(shared) == 0o1777
    assert sorted(p.name for p in shared.iterdir()) == ["someone-elses.txt"]


def test_a_non_empty_folder_that_is_not_a_run_is_refused_by_name(tmp_path):
    repo = folder(tmp_path / "repo", 0o755, "README.md", "setup.py")
    done = run_into(repo)
    assert done.returncode != 0
    assert (f"cannot use as the run folder {repo}: it holds 2 entries (README.md, setup.py) "
            "and no mpcbandit run") in done.stderr, done.stderr
    assert "give a path that does not exist yet" in done.stderr
    assert mode(repo) == 0o755
    assert sorted(p.name for p in repo.iterdir()) == ["README.md", "setup.py"]


def test_an_empty_folder_others_may_write_in_is_refused_and_keeps_its_mode(tmp_path):
    shared = folder(tmp_path / "shared", 0o777)
    with pytest.raises(OutputError, match="group or others may write in it \\(mode 0777\\)"):
        claim_run_folder(shared)
    assert mode(shared) == 0o777 and list(shared.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_an_empty_folder_of_another_user_is_refused(tmp_path):
    theirs = folder(tmp_path / "theirs", 0o700)
    os.chown(theirs, 4321, 4321)
    with pytest.raises(OutputError, match=f"{theirs}: it belongs to another user \\(uid 4321\\)"):
        claim_run_folder(theirs)


def test_a_missing_folder_is_made_private(tmp_path):
    out = claim_run_folder(tmp_path / "a" / "b")
    assert mode(out) == 0o700 and mode(out.parent) == 0o700


def test_an_existing_folder_is_claimed_where_its_parent_is_not_writable(tmp_path, monkeypatch):
    """A container's state folder is a mount point (`/state`, in `/`, which its user may not
    write): an empty folder of the user's is used as it is, its parent never written."""
    parent = tmp_path / "root"
    state = parent / "state"
    state.mkdir(parents=True, mode=0o700)
    real_access = os.access
    # root may write anywhere, so the parent's refusal is what access() says of it for the
    # container's user
    monkeypatch.setattr("mpcbandit.files.os.access",
                        lambda p, mode: Path(p) != parent and real_access(p, mode))
    assert claim_run_folder(state) == state
    assert sorted(os.listdir(parent)) == ["state"]
    with pytest.raises(OutputError, match="folder not writable"):  # a folder to make: refused
        claim_run_folder(parent / "new")
