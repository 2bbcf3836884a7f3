"""A SAMBA arm file or a Criteo log that cannot be read (not UTF-8, permission denied) is a
DataError naming the file, and through a config the key that names it: never a traceback."""

import pytest

from mpcbandit.config import load_config
from mpcbandit.data import criteo
from mpcbandit.data.samba import read_arm_file
from mpcbandit.errors import ConfigError, DataError
from mpcbandit.protocols import get_protocol

NOT_UTF8 = b"\xff\xfe\x00garbage\x80\n"


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
    monkeypatch.setattr(type(arm_file), "read_text", denied)
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
