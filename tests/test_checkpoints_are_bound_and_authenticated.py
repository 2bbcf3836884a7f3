"""A checkpoint resumes only into the run and party that wrote it, on the host that wrote it:
a flipped bit, another seed's checkpoint, an edited config, another party's file, or a missing
MAC key is refused naming the file and what differs."""

import shutil

import numpy as np
import pytest

from conftest import REPO
from mpcbandit.checkpoint import CheckpointError, CheckpointStore
from mpcbandit.config import load_config
from mpcbandit.identity import identity_fields

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
