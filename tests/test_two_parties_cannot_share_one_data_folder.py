"""`mpcbandit run CONFIG --data DIR` gives each party DIR/<role>.<index>/. Two parties whose
folders are one folder (one a link to the other's, or both links to a third) would read the same
data, and the run finished rc 0 on it; it is refused before any party starts, naming both
parties and the real folder. A party's folder may be a link anywhere else: where an
organisation keeps its data on its own host is its choice."""

import shutil

import pytest

from deadlines import deadline

from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.errors import DataError
from mpcbandit.launch import run_local

SETS = ['run.security="none"', "demo.iterations=2", "demo.length=4"]


@pytest.fixture
def demo(tmp_path):
    cfg = load_config("configs/demo-sum.toml", SETS)
    return cfg, write_split(cfg, tmp_path / "data")


def relink(link, target):
    """link, a party's folder, made a symbolic link to target (another folder)."""
    shutil.rmtree(link)
    link.symlink_to(target)


def test_a_folder_linked_to_another_partys_is_refused_before_any_party_starts(demo, tmp_path, cli):
    cfg, data = demo
    relink(data / "input.1", "input.0")   # relative, as a hand-made link would be
    opts = [a for s in SETS for a in ("--set", s)]
    done = cli("run", "configs/demo-sum.toml", "--data", data, "--out", tmp_path / "run", *opts,
               check=False, timeout=deadline(300))
    assert done.returncode != 0, done.stdout
    real = (data / "input.0").resolve()
    assert (f"--data: parties input.0 and input.1 would read the same data: {data.resolve()}/input.0 "
            f"and {data.resolve()}/input.1 are one folder, {real}") in done.stderr
    assert not (tmp_path / "run" / "logs").exists()   # no party was started


def test_two_folders_linked_to_one_outside_are_refused_naming_it(demo, tmp_path):
    cfg, data = demo
    outside = tmp_path / "elsewhere"
    shutil.copytree(data / "input.2", outside)
    relink(data / "input.1", outside)
    relink(data / "input.2", outside)
    with pytest.raises(DataError, match=rf"parties input.1 and input.2 would read the same data: "
                                        rf".* are one folder, {outside.resolve()}"):
        run_local(cfg, tmp_path / "plain", plaintext=True, echo=lambda *a: None, data_dir=data)


def test_a_folder_linked_outside_the_data_folder_is_read(demo, tmp_path):
    cfg, data = demo
    plain = run_local(cfg, tmp_path / "plain", plaintext=True, echo=lambda *a: None, data_dir=data)
    outside = tmp_path / "input1-elsewhere"
    shutil.copytree(data / "input.1", outside)
    relink(data / "input.1", outside)
    linked = run_local(cfg, tmp_path / "linked", plaintext=True, echo=lambda *a: None,
                       data_dir=data)
    assert linked["sum"] == plain["sum"] and linked["digest"] == plain["digest"]


def test_a_services_holder_folder_linked_to_anothers_is_refused_before_anything_is_written(
        tmp_path):
    from mpcbandit.serve.local import serve_local
    from mpcbandit.shipped_configs import config_path

    cfg = load_config(config_path("hannun-synthetic"), ["hannun.norms=\"scale\""])
    data = write_split(cfg, tmp_path / "data")
    relink(data / "feature_holder.1", data / "feature_holder.0")
    with pytest.raises(DataError) as e:
        serve_local(cfg, tmp_path / "svc", data_dir=data)
    assert "feature_holder.0 and feature_holder.1" in str(e.value)
    assert not (tmp_path / "svc" / "run.json").exists()
