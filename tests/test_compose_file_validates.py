"""The compose files are current and say what a deployment needs: one image built once, run as
a non-root user; every service a valid `mpcbandit party` reachable by its service name, with
only its own keys folder mounted read-only; a collect service in its own profile. (No container
engine runs here: test_compose_flow_runs_without_a_container_engine.py runs what they say.)"""

import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO
from mpcbandit.cli import _overrides
from mpcbandit.config import load_config

yaml = pytest.importorskip("yaml")
FILES = ["docker-compose.yml", "deploy/compose-samba.yml", "deploy/compose-demo.yml"]


def compose(name):
    return yaml.safe_load((REPO / name).read_text())


def test_compose_files_are_generated_from_the_configs():
    proc = subprocess.run([sys.executable, "scripts/make_compose.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


@pytest.mark.parametrize("name", FILES)
def test_the_image_is_built_once_and_runs_as_a_non_root_user(name):
    services = compose(name)["services"]
    builders = [s for s, svc in services.items() if "build" in svc]
    assert len(builders) == 1, builders
    assert {svc["image"] for svc in services.values()} == {"mpcbandit:local"}
    assert all(svc["pull_policy"] == "never" for s, svc in services.items() if s not in builders)
    assert all(not svc["user"].startswith("0") for svc in services.values())
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "\nUSER mpc\n" in dockerfile and "ENV MPCBANDIT_DATA=/data" in dockerfile
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv/", "runs/", "deploy/keys/", "**/*.key_secret"} <= set(ignored)


@pytest.mark.parametrize("name", FILES)
def test_every_service_runs_a_valid_party_with_only_its_own_keys(name):
    services = compose(name)["services"]
    seen, config = set(), None
    for service, svc in services.items():
        cmd = svc["command"]
        if cmd[0] == "collect":
            assert svc["profiles"] == ["collect"]
            assert all("/keys" not in v for v in svc["volumes"])  # collect holds no secret
            continue
        assert cmd[0] == "party"
        config, role, index = cmd[1], cmd[cmd.index("--role") + 1], int(cmd[cmd.index("--index") + 1])
        sets = tuple(cmd[i + 1] for i, c in enumerate(cmd) if c == "--set")
        cfg = load_config(REPO / config, _overrides(sets, None, None))  # what `mpcbandit check` does
        party = cfg.party(role, index)
        assert party.address.startswith(f"tcp://{service}:"), (service, party.address)
        assert cfg.network.bind == "any" and cfg.run.security == "curve"
        keys = [v for v in svc["volumes"] if ":/keys" in v]
        assert keys == [f"./{'keys' if name.startswith('deploy/') else 'deploy/keys'}/"
                        f"{Path(config).stem}/{party.name}:/keys:ro"], keys
        assert cmd[cmd.index("--result") + 1] == f"/results/{party.name}.json"
        assert all(v.startswith(("./", "../", "${")) for v in svc["volumes"])  # paths, not volume names
        seen.add(party.name)
    assert seen == {p.name for p in load_config(REPO / config).parties()}, "a party has no service"
