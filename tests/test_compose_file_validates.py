"""docker-compose.yml is current and every service's command is a valid `mpcbandit party`
invocation for a party whose address is that service (no container engine runs here)."""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from mpcbandit.cli import _overrides
from mpcbandit.config import load_config

yaml = pytest.importorskip("yaml")


def services():
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]


def test_compose_file_is_generated_from_the_configs():
    proc = subprocess.run([sys.executable, "scripts/make_compose.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_every_service_runs_a_valid_party_reachable_by_its_service_name():
    seen = {}
    for name, svc in services().items():
        cmd = svc["command"]
        assert cmd[0] == "party"
        config, role, index = cmd[1], cmd[cmd.index("--role") + 1], int(cmd[cmd.index("--index") + 1])
        sets = tuple(cmd[i + 1] for i, c in enumerate(cmd) if c == "--set")
        cfg = load_config(REPO / config, _overrides(sets, None, None))  # what `mpcbandit check` does
        party = cfg.party(role, index)
        assert party.address.startswith(f"tcp://{name}:"), (name, party.address)
        assert cfg.network.bind == "any" and cfg.run.security == "curve"
        mounts = svc["volumes"]
        secrets = [m for m in mounts if "key_secret" in m]
        assert secrets == [f"./deploy/keys/{Path(config).stem}/{party.name}.key_secret"
                           f":/keys/{party.name}.key_secret:ro"]
        assert all(m.endswith(":ro") for m in mounts if "/keys/" in m)
        seen.setdefault(config, set()).add(party.name)
    for config, names in seen.items():
        cfg = load_config(REPO / config)
        assert names == {p.name for p in cfg.parties()}, f"{config}: a party has no service"
