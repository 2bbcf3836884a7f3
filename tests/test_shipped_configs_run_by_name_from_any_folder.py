"""The configs ship with the package: from any folder `mpcbandit run hannun-synthetic` (or
`configs/hannun-synthetic.toml`, as the README writes it) finds the shipped file, `mpcbandit
configs` lists them, and an installed (not editable) package holds them."""

import json
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import REPO
from deadlines import deadline

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

SHIPPED = sorted((REPO / "mpcbandit" / "configs").glob("*.toml"))


def mpcbandit(*args, cwd, path=REPO, check=True):
    """`python -m mpcbandit ARGS` run in cwd with the package found on path (not in cwd)."""
    env = dict(os.environ, PYTHONPATH=str(path))
    proc = subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=deadline(120))
    if check and proc.returncode != 0:
        raise AssertionError(f"mpcbandit {' '.join(map(str, args))}: {proc.stdout}{proc.stderr}")
    return proc


def test_the_clones_configs_folder_is_the_packages():
    assert SHIPPED and (REPO / "configs").resolve() == (REPO / "mpcbandit" / "configs").resolve()


def test_configs_lists_every_shipped_config_with_its_protocol_and_a_line(tmp_path):
    lines = mpcbandit("configs", cwd=tmp_path).stdout.splitlines()
    for path in SHIPPED:
        protocol = tomllib.loads(path.read_text()).get("protocol", "(frontier)")
        row = next((ln for ln in lines if ln.split()[:1] == [path.stem]), None)
        assert row is not None, f"{path.stem} not listed"
        assert row.split()[1] == protocol and len(row.split()) > 4, row


@pytest.mark.parametrize("given", ["hannun-synthetic", "hannun-synthetic.toml",
                                   "configs/hannun-synthetic.toml"])
def test_a_shipped_config_is_found_by_name_outside_the_clone(given, tmp_path):
    out = mpcbandit("check", given, cwd=tmp_path).stdout
    assert "protocol hannun" in out and "feature_holder" in out


def test_a_run_by_name_outside_the_clone_starts_every_party(tmp_path):
    mpcbandit("run", "demo-sum", "--steps", 2, "--out", tmp_path / "run", cwd=tmp_path)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["protocol"] == "demo" and summary["steps"] == 2


def test_a_file_in_the_folder_wins_over_the_shipped_config_of_its_name(tmp_path):
    text = (REPO / "configs" / "demo-sum.toml").read_text().replace("seed = 1", "seed = 7")
    (tmp_path / "demo-sum.toml").write_text(text)
    assert "seed 7" in mpcbandit("check", "demo-sum.toml", cwd=tmp_path).stdout
    assert "seed 1" in mpcbandit("check", "demo-sum", cwd=tmp_path).stdout  # no such file here


def test_an_unknown_name_is_refused_with_the_shipped_names(tmp_path):
    proc = mpcbandit("run", "hannun-synthetc", cwd=tmp_path, check=False)
    assert proc.returncode != 0
    assert "'hannun-synthetc'" in proc.stderr and "hannun-synthetic" in proc.stderr


def test_an_installed_package_holds_the_configs(tmp_path):
    """build_py lays out the package as a wheel would (no network, no `wheel` needed)."""
    pytest.importorskip("setuptools")
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, src / name)
    for pkg in ("mpcbandit", "parties", "dealer"):
        shutil.copytree(REPO / pkg, src / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    built = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()",
                           "-q", "build_py", "--build-lib", str(built)], cwd=src,
                          capture_output=True, text=True, timeout=deadline(300))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (built / "mpcbandit" / "configs").glob("*.toml")) == \
        [p.name for p in SHIPPED]
    here = tmp_path / "elsewhere"
    here.mkdir()
    assert "demo-sum" in mpcbandit("configs", cwd=here, path=built).stdout
    assert "protocol hannun" in mpcbandit("check", "hannun-synthetic", cwd=here, path=built).stdout
