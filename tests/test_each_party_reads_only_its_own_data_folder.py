"""Isolation, checked as the curious operator would: every party runs from its own data folder
with every other party's folder unreadable to it, and the run completes; what each party
writes (its result, its log, its checkpoints) holds none of another party's values.

How the folders are made unreadable: each party process is uid 0 stripped of every capability
(`setpriv --bounding-set=-all`), so file permissions bind it as any user, in a group of its own;
its data folder belongs to another uid and to that group, mode 0750, and no other party's group
may enter it. The repository, the interpreter and the run's own files belong to root, so every
party reads those (keys are not what this test isolates: run.security = "none" on loopback)."""

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.launch import pick_base_port
from mpcbandit.protocols.inproc_runner import inproc_summary

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root and setpriv to give each party its own group")

# norms "promise": a split of the built-in task keeps the whole context's bound, so its folders
# are read as they are and the run equals the built-in run (auto would scale the folders')
SETS = ['run.security="none"', "hannun.iterations=12", 'hannun.exploration="seeded"',
        "hannun.arms=4", "hannun.dims=8", 'hannun.norms="promise"']
FIRST_GID = 47100


def confined(gid: int) -> list[str]:
    """The command prefix of a process that is root only by name: no capability, one group."""
    return ["setpriv", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--"]


def hand_over(path: Path, uid: int, gid: int, mode: int) -> None:
    for p in [path, *path.rglob("*")]:
        os.chown(p, uid, gid)
        os.chmod(p, mode if p.is_dir() else mode & 0o660)


def values_of(table: Path) -> list[float]:
    with open(table, newline="") as f:
        rows = list(csv.reader(f))[1:]
    return [float(c) for r in rows for c in r[1:]]


def holds_any(blob: bytes, values: list[float]) -> list[float]:
    """The values whose text (13 first characters of the repr) or float64 bytes are in blob."""
    return [v for v in values if v not in (0.0, 1.0, -1.0)
            and (repr(v)[:13].encode() in blob or np.float64(v).tobytes() in blob)]


def test_parties_confined_to_their_own_folders_complete_the_run_and_leak_nothing(tmp_path):
    cfg = load_config(REPO / "configs/hannun-synthetic.toml", SETS)
    data, work = tmp_path / "data", tmp_path / "work"
    write_split(cfg, data)
    names = [p.name for p in cfg.parties()]
    gid = {n: FIRST_GID + i for i, n in enumerate(names)}
    for n in names:
        (work / n).mkdir(parents=True)
        hand_over(work / n, 50000 + gid[n] - FIRST_GID, gid[n], 0o770)
        hand_over(data / n, 50000 + gid[n] - FIRST_GID, gid[n], 0o750)

    # the confinement holds: a party reads its own folder and no other
    own, other = data / "feature_holder.0" / "features.csv", data / "feature_holder.1" / "features.csv"
    probe = "import sys; open(sys.argv[1]).read(); open(sys.argv[2]).read()"
    denied = subprocess.run([*confined(gid["feature_holder.0"]), sys.executable, "-c", probe,
                             str(own), str(other)], capture_output=True, text=True)
    assert denied.returncode != 0 and f"PermissionError: [Errno 13] Permission denied: '{other}'" in denied.stderr

    base = pick_base_port("127.0.0.1", len(names))
    procs = {}
    for p in cfg.parties():
        me = work / p.name
        cmd = [*confined(gid[p.name]), sys.executable, "-m", "mpcbandit", "party",
               "configs/hannun-synthetic.toml", "--role", p.role, "--index", str(p.index),
               "--data", str(data / p.name), "--result", str(me / "result.json"),
               "--checkpoint-dir", str(me / "checkpoints"), "--checkpoint-every", "4",
               "--run-id", "isolation-test", "--set", f"network.base_port={base}",
               "--set", f"run.startup_s={deadline(60):g}",
               "--set", f"run.deadline_s={deadline(60):g}"]
        for s in SETS:
            cmd += ["--set", s]
        log = open(me / "party.log", "wb")
        procs[p.name] = (popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                               env=dict(os.environ, PYTHONPATH=str(REPO))), log)
    for name, (proc, log) in procs.items():
        try:
            proc.wait(timeout=deadline(180))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    logs = {n: (work / n / "party.log").read_text(errors="replace") for n in names}
    assert all(proc.returncode == 0 for proc, _ in procs.values()), {
        n: logs[n][-600:] for n, (proc, _) in procs.items() if proc.returncode}

    # the run is the built-in run: p' pulled the arms the built-in task gives
    import json
    arms = json.loads((work / "arm_puller.0" / "result.json").read_text())["output"]["arms"]
    assert arms == inproc_summary(cfg)["series"]["arms"]

    # what each party wrote holds nothing of another party's features
    for holder in ("feature_holder.0", "feature_holder.1"):
        secret = values_of(data / holder / "features.csv")
        assert holds_any((data / holder / "features.csv").read_bytes(), secret)  # the search finds
        for n in names:
            if n == holder:
                continue
            files = [f for f in (work / n).rglob("*") if f.is_file()]
            assert any(f.suffix == ".ckpt" for f in files) or n == "dealer.0", (n, files)
            for f in files:
                assert holds_any(f.read_bytes(), secret) == [], f"{f} holds {holder}'s values"
