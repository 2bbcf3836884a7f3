"""A party checks where its keys really are, as OpenSSH's StrictModes does: the secret, the
roster and the keys folder, through any symlink, and every folder above them up to the home
folder or /, belong to this user or root and are writable by no one else; a sticky folder like
/tmp may stand above the keys folder, but never directly hold a secret or the roster."""

import os

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.net.security import SecurityError, load_curve, write_keys

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2",
        "network.base_port=7800"]
PEERS = ["compute.0", "compute.1"]


def keys_in(folder):
    write_keys(folder, load_config(REPO / "configs/demo-sum.toml", SETS).parties())
    return folder


def test_a_keys_folder_under_a_sticky_folder_like_tmp_is_accepted(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    assert load_curve(str(keys_in(shared / "keys")), "input.0", PEERS).me == "input.0"


@pytest.mark.parametrize("loose", [0o777, 0o1777])
def test_a_secret_that_is_a_symlink_into_a_shared_folder_is_refused(tmp_path, loose):
    keys = keys_in(tmp_path / "keys")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, loose)
    secret = keys / "input.0.key_secret"
    os.replace(secret, shared / "input.0.key_secret")
    secret.symlink_to(shared / "input.0.key_secret")
    with pytest.raises(SecurityError, match=f"secret key file {secret} \\(really "
                                            f"{shared / 'input.0.key_secret'}\\): {shared} above "
                                            f"it is writable by group or others \\(mode {loose:04o}\\)"):
        load_curve(str(keys), "input.0", PEERS)


def test_a_roster_that_is_a_symlink_into_a_shared_folder_is_refused(tmp_path):
    keys = keys_in(tmp_path / "keys")
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    os.replace(keys / "roster.json", shared / "roster.json")
    (keys / "roster.json").symlink_to(shared / "roster.json")
    with pytest.raises(SecurityError, match=f"roster {keys / 'roster.json'} \\(really .*\\): "
                                            f"{shared} above it is writable by group or others"):
        load_curve(str(keys), "input.0", PEERS)


def test_a_keys_folder_inside_a_world_writable_parent_is_refused(tmp_path):
    parent = tmp_path / "open"
    keys = keys_in(parent / "keys")
    os.chmod(parent, 0o777)
    with pytest.raises(SecurityError, match=f"keys folder {keys}: {parent} above it is writable "
                                            "by group or others \\(mode 0777\\)"):
        load_curve(str(keys), "input.0", PEERS)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder away needs root")
def test_a_folder_above_the_keys_owned_by_another_user_is_refused(tmp_path):
    parent = tmp_path / "theirs"
    keys = keys_in(parent / "keys")
    os.chown(parent, 4321, 4321)
    with pytest.raises(SecurityError, match=f"keys folder {keys}: {parent} above it belongs to "
                                            "uid 4321, neither you nor root"):
        load_curve(str(keys), "input.0", PEERS)


def test_a_roster_that_is_not_a_regular_file_is_refused_without_reading_it(tmp_path):
    keys = keys_in(tmp_path / "keys")
    roster = keys / "roster.json"
    roster.unlink()
    os.mkfifo(roster, 0o600)  # reading it would wait for a writer forever
    with pytest.raises(SecurityError, match=f"roster {roster} is not a regular file"):
        load_curve(str(keys), "input.0", PEERS)
