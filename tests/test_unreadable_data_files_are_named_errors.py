"""A data file or folder that cannot be read (not UTF-8, permission denied, a FIFO or a folder
where a file belongs, a path through a file, a name too long) is a DataError naming the path,
and through a config the key that names it: never a traceback, never a read that waits
forever. A keys_dir that is a file is a ConfigError naming run.keys_dir.

As root, permissions deny nothing: a denial is stood in for by os.stat raising EACCES for the
path, and by real errors that take the same road (ENAMETOOLONG, ENOTDIR)."""

import errno
import os

import pytest

from mpcbandit.config import load_config
from mpcbandit.data import criteo
from mpcbandit.data.mnist import load_mnist
from mpcbandit.data.samba import read_arm_file
from mpcbandit.errors import ConfigError, DataError
from mpcbandit.net.security import load_curve
from mpcbandit.protocols import get_protocol

NOT_UTF8 = b"\xff\xfe\x00garbage\x80\n"
TOO_LONG = "x" * 300  # one component past NAME_MAX: stat fails as a denied folder would


@pytest.fixture
def deny(monkeypatch):
    """deny(path): from now on, os.stat of path or of anything under it is EACCES."""
    real_stat = os.stat

    def deny(denied):
        def stat(path, *args, **kwargs):
            if str(path) == str(denied) or str(path).startswith(f"{denied}/"):
                raise PermissionError(errno.EACCES, "Permission denied", str(path))
            return real_stat(path, *args, **kwargs)
        monkeypatch.setattr(os, "stat", stat)
    return deny


def test_an_arm_file_that_is_not_text_is_named_through_its_config_key(tmp_path):
    arm_file = tmp_path / "arms.txt"
    arm_file.write_bytes(NOT_UTF8)
    with pytest.raises(ConfigError) as e:
        load_config("configs/samba-synthetic.toml", [f'samba.data="{arm_file}"'])
    assert e.value.key == "samba.data" and f"{arm_file}: cannot read it" in e.value.reason


def test_an_arm_file_denied_to_the_party_is_a_data_error(tmp_path, monkeypatch):
    arm_file = tmp_path / "arms.txt"
    arm_file.write_text("2\n0.5\n0.25\n")
    assert list(read_arm_file(arm_file)) == [0.5, 0.25]

    def denied(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(self))
    monkeypatch.setattr(type(arm_file), "read_bytes", denied)
    with pytest.raises(DataError, match=f"{arm_file}: cannot read it \\(PermissionError"):
        read_arm_file(arm_file)


def test_a_criteo_log_that_is_not_text_is_named_through_its_config_key(tmp_path):
    log = tmp_path / "criteo.csv"
    log.write_bytes(NOT_UTF8 * 10)
    cfg = load_config("configs/o3m-criteo.toml", [f'o3m.data_path="{log}"'])
    with pytest.raises(ConfigError) as e:
        get_protocol("o3m").plaintext(cfg)  # the log is read when the run starts
    assert e.value.key == "o3m.data_path" and f"{log}: cannot read it" in e.value.reason


def test_a_criteo_log_denied_to_the_party_is_a_data_error(tmp_path, monkeypatch):
    log = tmp_path / "criteo.csv"
    log.write_text("anything\n")

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))
    monkeypatch.setattr(criteo, "open", denied, raising=False)
    with pytest.raises(DataError, match=f"{log}: cannot read it \\(PermissionError"):
        criteo.load_criteo(log)


def mnist_folder(tmp_path, labels=True):
    folder = tmp_path / "mnist"
    folder.mkdir()
    (folder / "train-images-idx3-ubyte").write_bytes(bytes([0, 0, 8, 1]) + (1).to_bytes(4, "big") + b"\0")
    if labels:
        (folder / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 8, 1]) + (1).to_bytes(4, "big") + b"\1")
    return folder


@pytest.mark.parametrize("how", ["denied", "name too long"])
def test_an_mnist_folder_that_cannot_be_searched_is_named_through_its_key(tmp_path, deny, how):
    folder = mnist_folder(tmp_path) if how == "denied" else tmp_path / TOO_LONG
    if how == "denied":
        deny(folder)
    with pytest.raises(ConfigError) as e:
        load_config("configs/hannun-mnist.toml", [f'hannun.data_dir="{folder}"'])
    assert e.value.key == "hannun.data_dir" and f"{folder}: cannot read it" in e.value.reason


def test_an_mnist_folder_that_is_a_file_is_named_through_its_key(tmp_path):
    afile = tmp_path / "mnist"
    afile.write_text("not a folder\n")
    with pytest.raises(ConfigError) as e:
        load_config("configs/hannun-mnist.toml", [f'hannun.data_dir="{afile}"'])
    assert e.value.key == "hannun.data_dir" and f"{afile}: cannot read it: a file" in e.value.reason


def test_mnist_files_that_are_a_fifo_or_missing_are_data_errors(tmp_path):
    folder = mnist_folder(tmp_path, labels=False)
    with pytest.raises(DataError, match=f"train-labels-idx1-ubyte\\[.gz\\] not found in {folder}"):
        load_mnist(folder)
    os.mkfifo(folder / "train-labels-idx1-ubyte")  # reading it would wait for a writer forever
    with pytest.raises(DataError, match="train-labels-idx1-ubyte: cannot read it: a FIFO"):
        load_mnist(folder)


@pytest.mark.parametrize("how", ["denied", "name too long"])
def test_a_samba_folder_that_cannot_be_searched_is_named_through_its_key(tmp_path, deny, how):
    folder = tmp_path / ("samba" if how == "denied" else TOO_LONG)
    if how == "denied":
        folder.mkdir()
        (folder / "arms.txt").write_text("2\n0.5\n0.25\n")
        deny(folder)
    with pytest.raises(ConfigError) as e:
        load_config("configs/samba-synthetic.toml", [f'samba.data="{folder}/arms.txt"',
                                                      "samba.arms=2"])
    assert e.value.key == "samba.data" and "cannot read it" in e.value.reason


def test_an_arm_file_that_is_a_fifo_is_named_not_waited_on(tmp_path):
    fifo = tmp_path / "arms.txt"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError) as e:
        load_config("configs/samba-synthetic.toml", [f'samba.data="{fifo}"', "samba.arms=2"])
    assert e.value.key == "samba.data" and f"{fifo}: cannot read it: a FIFO" in e.value.reason
    with pytest.raises(DataError, match="a FIFO, socket or device, not a regular file"):
        read_arm_file(fifo)


def test_a_criteo_log_denied_at_its_folder_is_named_through_its_key(tmp_path, deny):
    log = tmp_path / "criteo" / "log.csv"
    log.parent.mkdir()
    log.write_text("anything\n")
    deny(log.parent)
    cfg = load_config("configs/o3m-criteo.toml", [f'o3m.data_path="{log}"'])
    with pytest.raises(ConfigError) as e:
        get_protocol("o3m").plaintext(cfg)
    assert e.value.key == "o3m.data_path" and f"{log}: cannot read it (PermissionError" in e.value.reason


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_keys_dir_that_is_a_file_names_the_key_and_the_file(tmp_path, where):
    afile = tmp_path / "keys"
    afile.write_text("not a folder\n")
    keys_dir = afile if where == "a file" else afile / "keys"
    with pytest.raises(ConfigError) as e:
        load_curve(str(keys_dir), "input.0", ["compute.0"])
    assert e.value.key == "run.keys_dir" and str(keys_dir) in e.value.reason
