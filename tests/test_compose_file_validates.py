"""The compose files are current and say what a deployment needs: one image built once, run as
the image's non-root user whoever the operator is; every service a valid `mpcbandit party`
reachable by its service name, with only its own keys folder and its own data folder mounted
read-only, and $MPCBANDIT_STEPS as its step count; a collect service in its own
profile. test_compose_flow_runs_without_a_container_engine.py runs what they say as processes,
test_compose_up_in_containers.py in containers."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from compose_files import FILES, interpolate, make_compose, services
from conftest import REPO
from mpcbandit.cli import _load
from mpcbandit.config import load_config


def test_compose_files_are_generated_from_the_configs():
    proc = subprocess.run([sys.executable, "scripts/make_compose.py", "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + proc.stdout


@pytest.mark.parametrize("name", FILES)
def test_the_image_is_built_once_and_runs_as_a_non_root_user(name):
    found = services(name)
    builders = [s for s, svc in found.items() if "build" in svc]
    assert len(builders) == 1, builders
    assert {svc["image"] for svc in found.values()} == {"mpcbandit:local"}
    assert all(svc["pull_policy"] == "never" for s, svc in found.items() if s not in builders)
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "\nUSER mpc\n" in dockerfile and "ENV MPCBANDIT_DATA=/data" in dockerfile
    ignored = (REPO / ".dockerignore").read_text().split()
    assert {".venv/", "runs/", "deploy/keys/", "**/*.key_secret"} <= set(ignored)


@pytest.mark.parametrize("name", FILES)
def test_every_service_runs_a_valid_party_with_only_its_own_keys(name):
    """A party of the experiment (no profile) or of its service (profile serve: under the
    experiment's host name, so the same roster serves both)."""
    seen, served, config = set(), set(), None
    for service, svc in services(name).items():
        cmd = svc["command"]
        if cmd[0] == "collect":
            assert svc["profiles"] == ["collect"]
            assert all("/keys" not in v for v in svc["volumes"])  # collect holds no secret
            continue
        assert cmd[0] in ("party", "serve") and (cmd[0] == "serve") == ("profiles" in svc)
        config, role, index = cmd[1], cmd[cmd.index("--role") + 1], int(cmd[cmd.index("--index") + 1])
        sets = tuple(cmd[i + 1] for i, c in enumerate(cmd) if c == "--set")
        steps = int(cmd[cmd.index("--steps") + 1]) if "--steps" in cmd else None
        cfg = _load(REPO / config, sets, None, None, steps)  # as `check`
        party = cfg.party(role, index)
        if cmd[0] == "serve":
            assert svc["profiles"] == ["serve"] and service == f"serve-{role}-{index}"
            host = svc["hostname"]
            assert svc["networks"] == {"mpcbandit": {"aliases": [host]}}
            assert party.address.startswith(f"tcp://{host}:"), (service, party.address)
            served.add(party.name)
        else:
            assert party.address.startswith(f"tcp://{service}:"), (service, party.address)
        assert cfg.network.bind == "any" and cfg.run.security == "curve"
        keys = [v for v in svc["volumes"] if ":/keys" in v]
        assert keys == [f"./{'keys' if name.startswith('deploy/') else 'deploy/keys'}/"
                        f"{Path(config).stem}/{party.name}:/keys:ro"], keys
        if cmd[0] == "party":
            assert cmd[cmd.index("--result") + 1] == f"/results/{party.name}.json"
            seen.add(party.name)
        assert all(v.startswith(("./", "../", "${")) for v in svc["volumes"])  # paths, not volume names
    assert seen == {p.name for p in load_config(REPO / config).parties()}, "a party has no service"
    assert served == (set(make_compose.serve_names(config)) if name in make_compose.SERVED
                      else set()), "a party of the service has no serve service"


@pytest.mark.parametrize("name", FILES)
def test_containers_run_as_the_image_user_even_when_the_operator_is_root(name):
    """The header's old `export MPCBANDIT_UID=$(id -u)` ran them as root for a root operator."""
    uid = re.search(r"useradd .*--uid (\d+) mpc\b", (REPO / "Dockerfile").read_text())[1]
    text = (REPO / name).read_text()
    assert "id -u" not in text.split("\nname:")[0]  # the header tells no one to pass their own uid
    root_operator = {"MPCBANDIT_UID": "0", "MPCBANDIT_GID": "0", "USER": "root", "UID": "0"}
    assert {svc["user"] for svc in services(name, root_operator).values()} == {f"{uid}:{uid}"}
    assert f"chown -R {uid}:{uid} deploy/keys/" in text  # keys and results owned by that user
    mine = {"MPCBANDIT_USER": "1234:1234"}  # the operator's word, and only that, changes it
    assert {svc["user"] for svc in services(name, mine).values()} == {"1234:1234"}


@pytest.mark.parametrize("name", FILES)
def test_mpcbandit_steps_sets_the_step_count_of_every_service(name):
    """$MPCBANDIT_STEPS reaches every party and collect (they must agree on the run) as
    `--steps`; unset, the config's own count."""
    def steps_of(env):
        counts = set()
        for svc in services(name, env).values():
            cmd = svc["command"]
            if cmd[0] == "serve":  # a service has no step count
                continue
            sets = tuple(cmd[i + 1] for i, c in enumerate(cmd) if c == "--set")
            cfg = _load(REPO / cmd[1], sets, None, None, int(cmd[cmd.index("--steps") + 1]))
            counts.add(make_compose.own_steps(cfg))
        return counts

    config = next(c for f, c in make_compose.EXPERIMENTS if f == name)
    assert steps_of({}) == {make_compose.own_steps(load_config(REPO / config))}
    assert steps_of({"MPCBANDIT_STEPS": "37"}) == {37}


@pytest.mark.parametrize("name", FILES)
def test_each_service_mounts_only_its_own_data_folder(name, tmp_path):
    """Issue 46: a party reads its own folder (`data split` writes one for exactly the parties
    that read data), mounted read-only at /data, and nothing of another party's."""
    split = subprocess.run([sys.executable, "-m", "mpcbandit", "data", "split",
                            make_compose.EXPERIMENTS[FILES.index(name)][1], "--out", tmp_path / "s"],
                           cwd=REPO, capture_output=True, text=True)
    assert split.returncode == 0, split.stderr
    readers = {p.name for p in (tmp_path / "s").iterdir()}
    root = {f: make_compose.data_root(c) for f, c in make_compose.EXPERIMENTS}[name]
    for service, svc in services(name).items():
        cmd = svc["command"]
        mounted = [v for v in svc["volumes"] if v.endswith(":/data:ro")]
        if cmd[0] == "collect":
            assert mounted == [] and "--data" not in cmd
            continue
        party = f"{cmd[cmd.index('--role') + 1]}.{cmd[cmd.index('--index') + 1]}"
        if party in readers:
            own = os.path.relpath(REPO / root / party, (REPO / name).parent)
            assert mounted == [f"./{own}:/data:ro"], (service, mounted)
            assert cmd[cmd.index("--data") + 1] == "/data"
        else:
            assert mounted == [] and "--data" not in cmd, service


def _serve_services() -> dict:
    return {s: svc for s, svc in services("docker-compose.yml").items()
            if svc["command"][0] == "serve"}


def test_the_serve_profile_publishes_each_api_on_the_hosts_loopback_behind_its_token():
    """Inside its container a party's API binds beyond loopback (the published port reaches it
    there), which needs a bearer token: the organisation's, beside its key (read-only); on the
    host only 127.0.0.1 reaches it. A later `docker compose stop` then `up` needs no other
    command: the party resumes what its own state folder holds."""
    ports = set()
    for service, svc in _serve_services().items():
        cmd = svc["command"]
        sets = tuple(cmd[i + 1] for i, c in enumerate(cmd) if c == "--set")
        cfg = _load(REPO / cmd[1], sets, None, None, None)
        party = f"{cmd[cmd.index('--role') + 1]}.{cmd[cmd.index('--index') + 1]}"
        port = cfg.serve.port
        assert svc["ports"] == [f"127.0.0.1:{port}:{port}"] and port not in ports
        ports.add(port)
        assert cfg.serve.bind == "0.0.0.0" and cfg.serve.token_file == "/keys/api.token"
        assert cfg.serve.insecure_http  # published on the host's loopback only: plain HTTP
        assert cfg.section.reveal == "stop"   # for the recipe's serve-replay, exact
        assert f"./deploy/keys/hannun-synthetic/{party}:/keys:ro" in svc["volumes"]
        state = f"./runs/compose/hannun-synthetic-serve/{party}:/state"
        assert state in svc["volumes"] and cmd[cmd.index("--state") + 1] == "/state"
        assert "--start-or-resume" in cmd and "--resume" not in cmd
        assert cmd[cmd.index("--run-id") + 1] == ""  # $MPCBANDIT_RUN_ID, needed by a new service
        run_id = services("docker-compose.yml", {"MPCBANDIT_RUN_ID": "r1"})[service]["command"]
        assert run_id[run_id.index("--run-id") + 1] == "r1"
        assert svc["stop_grace_period"] == "30s"  # the drain's deadline (docs/serve.md) fits
        assert cfg.serve.decision_timeout_s + 10 < 30


def test_the_serve_recipe_starts_calls_and_replays_the_services_of_the_file():
    """The header's serve recipe names every serve service in its `up` (with --profile serve
    alone compose would start the experiment's parties too) and calls each party on its own
    published port with its own token."""
    steps = [c for c, _, _ in make_compose.serve_steps("docker-compose.yml",
                                                       "configs/hannun-synthetic.toml")]
    header = (REPO / "docker-compose.yml").read_text().split("\nname:")[0]
    setup = len(make_compose.setup_steps("configs/hannun-synthetic.toml"))
    assert all(f"#   {c}   # " in header for c in steps)
    up = next(c for c in steps if " up -d " in c)
    assert up.split(" up -d ")[1].split() == list(_serve_services())
    calls = [c for c in steps if c.startswith("curl ")]
    for c in calls:
        party = re.search(r"hannun-synthetic/([\w.]+)/api\.token", c)[1]
        port = make_compose.serve_ports("configs/hannun-synthetic.toml")[party]
        assert f"http://127.0.0.1:{port}/v1/" in c
    assert steps[:setup] == [c for c, _, _ in make_compose.operator_steps(
        "docker-compose.yml", "configs/hannun-synthetic.toml")[:setup]]
    # each party's bundle of its state folder as it left it (never the folder itself),
    # replayed on the config and options of the services, whose dealer reveals its keys at
    # each stop, with no record written by hand
    assert steps[-2] == ("mpcbandit serve-bundle --state runs/compose/hannun-synthetic-serve/NAME "
                         "--out runs/compose/hannun-synthetic-replay/NAME")
    assert steps[-1] == ("mpcbandit serve-replay runs/compose/hannun-synthetic-replay --config "
                         "configs/hannun-synthetic.toml --set hannun.reveal=stop --data "
                         "deploy/data/hannun-synthetic")
