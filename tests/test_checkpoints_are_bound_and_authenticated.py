"""A checkpoint resumes only into the run and party that wrote it, on the host that wrote it:
a flipped bit, another seed's checkpoint, an edited config, another party's file, another run
of the same config and seed, or a missing MAC key is refused naming the file and what differs."""

import json
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO
from deadlines import deadline
from partyprocs import kill_party, party_pids, start_run, wait_for_progress
from mpcbandit.checkpoint import CheckpointError, CheckpointStore
from mpcbandit.config import load_config
from mpcbandit.identity import identity_fields

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

STATE = {"shares": np.arange(6, dtype=np.uint64), "t": 4, "history": [1.5, 2.5]}


def store(tmp_path, party="compute.0", sets=()):
    cfg = load_config(REPO / "configs/demo-sum.toml", ["network.base_port=7500", *sets])
    return CheckpointStore(tmp_path, party, identity_fields(cfg, addresses=False))


def test_the_state_comes_back_exactly(tmp_path):
    store(tmp_path).save(4, STATE)
    got = store(tmp_path).load(4)
    assert got["t"] == 4 and got["history"] == [1.5, 2.5]
    assert got["shares"].dtype == np.uint64 and got["shares"].tolist() == list(range(6))


def test_a_flipped_bit_is_refused(tmp_path):
    path = store(tmp_path).save(4, STATE)
    for pos in (9, len(path.read_bytes()) // 2, len(path.read_bytes()) - 1):
        data = bytearray(path.read_bytes())
        data[pos] ^= 0x10
        bad = tmp_path / "compute.0" / "8.ckpt"
        bad.write_bytes(bytes(data))
        with pytest.raises(CheckpointError, match=r"8\.ckpt fails its integrity check"):
            store(tmp_path).load(8)


@pytest.mark.parametrize("sets,named", [
    (["seed=99"], "seed: checkpoint 1, this run 99"),
    (["demo.length=5"], "demo.length"),
])
def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(tmp_path, sets, named):
    store(tmp_path).save(4, STATE)
    with pytest.raises(CheckpointError, match="is of another run") as e:
        store(tmp_path, sets=sets).load(4)
    assert named in str(e.value)


def test_another_partys_file_and_a_renamed_iteration_are_refused(tmp_path):
    store(tmp_path, "compute.1").save(4, STATE)
    (tmp_path / "compute.0").mkdir()
    shutil.copy(tmp_path / "compute.1" / ".mac_key", tmp_path / "compute.0" / ".mac_key")
    shutil.copy(tmp_path / "compute.1" / "4.ckpt", tmp_path / "compute.0" / "4.ckpt")
    with pytest.raises(CheckpointError, match="belongs to party 'compute.1'"):
        store(tmp_path).load(4)
    shutil.copy(tmp_path / "compute.1" / "4.ckpt", tmp_path / "compute.1" / "6.ckpt")
    with pytest.raises(CheckpointError, match="holds iteration 4, not 6"):
        store(tmp_path, "compute.1").load(6)


def test_a_checkpoint_without_its_hosts_key_is_refused(tmp_path):
    store(tmp_path).save(4, STATE)
    (tmp_path / "compute.0" / ".mac_key").unlink()
    with pytest.raises(CheckpointError, match="no MAC key"):
        store(tmp_path).load(4)
    with pytest.raises(CheckpointError, match="no checkpoint at iteration 5"):
        store(tmp_path).load(5)


def test_a_resumed_run_may_listen_on_other_ports(tmp_path):
    store(tmp_path).save(4, STATE)
    assert store(tmp_path, sets=["network.base_port=9100"]).load(4)["t"] == 4


def test_a_protocol_that_cannot_checkpoint_refuses_the_option_saying_why(cli, tmp_path):
    proc = cli("run", "configs/mpc-ops.toml", "--checkpoint-every", "5", "--out", tmp_path,
               check=False)
    assert proc.returncode != 0
    assert "mpcops cannot checkpoint or resume: a benchmark" in proc.stderr
    assert "demo, feducb, hannun, jdp, o3m, samba" in proc.stderr
    assert not (tmp_path / "parties").exists()  # refused before any party started


def test_a_checkpoint_of_another_run_instance_of_the_same_config_is_refused(tmp_path):
    cfg = load_config(REPO / "configs/demo-sum.toml", ["network.base_port=7500"])
    CheckpointStore(tmp_path, "compute.0", identity_fields(cfg, addresses=False), "run-b").save(4, STATE)
    with pytest.raises(CheckpointError) as e:
        CheckpointStore(tmp_path, "compute.0", identity_fields(cfg, addresses=False), "run-a").load(4)
    assert "4.ckpt is of another run: run_id: checkpoint 'run-b', this run 'run-a'" in str(e.value)


# two runs of one config and seed, each killed past iteration KILL_AFTER: with a checkpoint
# every EVERY iterations, both keep iteration RESUMED_AT, where the first resumes
EVERY, KILL_AFTER, RESUMED_AT = 150, 170, 150


def killed_run(out: Path) -> None:
    launcher = start_run("configs/demo-sum.toml", "--seed", "9", "--set", "demo.iterations=1500",
                         "--set", "demo.length=8", "--set", f"run.deadline_s={deadline(15):g}",
                         # >= 4.6 ms an iteration (test_checkpoint_resume_gives_the_...)
                         "--net", "one_way_ms=2,mbit_s=0.2", "--no-estimate", "--checkpoint-every", EVERY,
                         out=out)
    wait_for_progress(out / "progress", minimum=KILL_AFTER, parties=("compute.0", "output.0"))
    err, _ = kill_party(launcher, party_pids(launcher.pid)["compute.0"], signal.SIGKILL,
                        timeout=deadline(30))
    assert launcher.returncode != 0 and "compute.0" in err, err


def test_a_partys_checkpoints_from_another_run_of_the_same_config_and_seed_are_refused(cli, tmp_path):
    """The output party's whole checkpoint folder (its MAC key too) taken from another run of
    the same config and seed: the resume names the file and the two runs before any party
    computes with it."""
    this, other = tmp_path / "this", tmp_path / "other"
    killed_run(this)
    killed_run(other)
    shutil.rmtree(this / "checkpoints" / "output.0")
    shutil.copytree(other / "checkpoints" / "output.0", this / "checkpoints" / "output.0")
    assert (this / "checkpoints" / "output.0" / f"{RESUMED_AT}.ckpt").exists()
    proc = cli("run", "--resume", this, check=False)
    assert proc.returncode != 0, proc.stdout
    theirs, ours = (json.loads((d / "run.json").read_text())["run_id"] for d in (other, this))
    assert f"output.0/{RESUMED_AT}.ckpt is of another run: run_id: checkpoint '{theirs}', " \
           f"this run '{ours}'" in proc.stderr, proc.stderr
    assert not (this / "summary.json").exists()


def test_a_party_that_checkpoints_needs_the_runs_id(cli, tmp_path):
    proc = cli("party", "configs/demo-sum.toml", "--role", "input", "--index", "0",
               "--set", "network.base_port=7600", "--set", f"run.startup_s={deadline(2):g}",
               "--set", 'run.security="none"',
               "--checkpoint-dir", tmp_path, "--checkpoint-every", "5", check=False)
    assert proc.returncode != 0 and "--run-id" in proc.stderr, proc.stderr
