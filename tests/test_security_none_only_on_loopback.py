"""security = 'none' is for one machine: refused when a party is beyond loopback unless the
operator says --insecure, warned about whenever it runs; no shipped config turns it on."""

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from conftest import REPO
from deadlines import deadline
from mpcbandit.config import RunSection, load_config
from mpcbandit.errors import ConfigError
from mpcbandit.net.security import is_loopback
from parties import check_security_mode


def test_no_shipped_config_turns_security_off():
    # read as TOML, not validated: a config whose data set is absent is still checked
    assert RunSection().security == "curve"
    paths = sorted((REPO / "configs").glob("*.toml"))
    assert len(paths) >= 12
    for path in paths:
        raw = tomllib.loads(path.read_text())
        assert raw.get("run", {}).get("security", "curve") == "curve", path.name


@pytest.mark.parametrize("address,expected", [
    ("tcp://127.0.0.1:7000", True), ("tcp://127.8.9.1:7000", True), ("tcp://localhost:1", True),
    ("tcp://[::1]:7000", True), ("tcp://10.0.0.2:7000", False), ("tcp://dealer-0:7000", False),
    ("tcp://0.0.0.0:7000", False),
])
def test_loopback_addresses_are_recognised(address, expected):
    assert is_loopback(address) is expected


def test_none_beyond_loopback_is_refused_naming_the_party_unless_insecure():
    cfg = load_config(REPO / "configs/demo-sum.toml",
                      ['run.security="none"', 'network.addresses={"compute.1" = "tcp://10.1.2.3:7001"}',
                       "network.base_port=7100"])
    with pytest.raises(ConfigError) as e:
        check_security_mode(cfg, insecure=False)
    assert e.value.key == "run.security" and "compute.1" in e.value.reason
    assert "--insecure" in e.value.reason
    check_security_mode(cfg, insecure=True)  # the operator's explicit choice


def test_a_loopback_run_without_security_warns(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "run", "configs/demo-sum.toml",
                           "--set", 'run.security="none"', "--set", "demo.iterations=2",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True,
                          timeout=deadline(120), env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert "WARNING: this run is not private: run.security = 'none'" in done.stderr
    logs = "".join(p.read_text() for p in (Path(tmp_path) / "logs").glob("*.log"))
    assert "WARNING: this run is not private: run.security = 'none'" in logs  # each party too
