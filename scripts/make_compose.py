"""Write the compose files: one service per party, one image built once, `mpcbandit party`
per service, and a `collect` service that merges the results into summary.json.

The default experiment is docker-compose.yml; the others are deploy/compose-NAME.yml (run
with `docker compose -f deploy/compose-NAME.yml up`), each its own compose project. Every
service reaches its peers by service name, mounts only its own keys folder (its secret and the
roster) and its own data folder (made by `mpcbandit data split`, or the organisation's own
table: docs/data.md) read-only, and the experiment's results folder, and runs as the image's
non-root user unless $MPCBANDIT_USER says otherwise. $MPCBANDIT_STEPS sets every
service's step count (the protocol's own key), so a file can run in seconds.

The default experiment's file also has a `serve` profile (docs/serve.md): one service per party
of the service running `mpcbandit serve`, each with the same keys and its own data folder, a
state folder of its own and its API published on the host's loopback; the header gives its
recipe too (serve_steps).

    python scripts/make_compose.py            # rewrite the compose files
    python scripts/make_compose.py --check    # exit 1 if any compose file is stale
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.data.split import write_split  # noqa: E402
from mpcbandit.protocols import get_protocol  # noqa: E402

#: (compose file, config) per experiment; the first is the default experiment
EXPERIMENTS = [
    ("docker-compose.yml", "configs/hannun-synthetic.toml"),
    ("deploy/compose-samba.yml", "configs/samba-synthetic.toml"),
    ("deploy/compose-demo.yml", "configs/demo-sum.toml"),
]
BASE_PORT = 7000
IMAGE = "mpcbandit:local"
#: container paths of the three mounts
KEYS, RESULTS, DATA = "/keys", "/results", "/data"
#: the Dockerfile's non-root user `mpc` (uid:gid); it must own the keys, data and results folders
IMAGE_USER = "1000:1000"
#: the files with a `serve` profile: every party a long-running `mpcbandit serve`
SERVED = {"docker-compose.yml"}
#: the serve profile: party k's API listens on SERVE_PORT + k, published on the host's loopback
SERVE_PORT = 8701
#: the serve profile's container paths: each party's state folder, and its API's bearer token
#: (beside its secret key: each organisation makes its own)
STATE, TOKEN = "/state", "/keys/api.token"


def overrides() -> list[str]:
    """The --set options that put each party on its own compose host."""
    return ['network.host="{role}-{index}"', f"network.base_port={BASE_PORT}",
            'network.bind="any"', f'run.keys_dir="{KEYS}"']


def keys_root(config: str) -> str:
    """The folder of every party's keys folder on the docker host (relative to the repository)."""
    return f"deploy/keys/{Path(config).stem}"


def keys_dir(config: str, party: str) -> str:
    """A party's keys folder on the docker host (relative to the repository)."""
    return f"{keys_root(config)}/{party}"


def data_root(config: str) -> str:
    """The folder of every party's data folder on the docker host (relative to the repository)."""
    return f"deploy/data/{Path(config).stem}"


def data_parties(cfg) -> set[str]:
    """The parties of cfg that read a data folder: those `data split` writes one for."""
    with tempfile.TemporaryDirectory() as tmp:
        return {p.name for p in write_split(cfg, Path(tmp) / "split").iterdir()}


def results_dir(config: str) -> str:
    return f"runs/compose/{Path(config).stem}"


def compose_command(compose_file: str) -> str:
    """`docker compose`, with `-f FILE` for any file but the default one."""
    return "docker compose" + ("" if compose_file == "docker-compose.yml" else f" -f {compose_file}")


#: a step an operator runs from the repository root: (command, per party, why); a per-party
#: command holds NAME, each party's name in turn (each organisation runs its own)
Step = tuple[str, bool, str]


def serve_names(config: str) -> list[str]:
    """Every party of config's service (`mpcbandit serve`), as ROLE.INDEX."""
    cfg = load_config(ROOT / config, overrides())
    return [f"{r}.{i}" for r, i in get_protocol(cfg.protocol).served()["roles"](cfg.section)]


def serve_service(name: str) -> str:
    """The serve profile's service of a party ROLE.INDEX: serve-ROLE-INDEX."""
    return "serve-" + name.replace(".", "-")


def serve_ports(config: str) -> dict[str, int]:
    """Each party of the service -> its API's port, inside its container and on the host."""
    return {name: SERVE_PORT + k for k, name in enumerate(serve_names(config))}


def serve_overrides(port: int) -> list[str]:
    """The --set options of a party's API in its container: bound beyond the container's
    loopback (the published port reaches it there), so guarded by its bearer token; plain
    HTTP, as the port is published on the host's loopback only (a deployment across hosts
    gives serve.tls_cert and serve.tls_key instead: docs/serve-tls.md)."""
    return ['serve.bind="0.0.0.0"', f"serve.port={port}", f'serve.token_file="{TOKEN}"',
            "serve.insecure_http=true"]


def serve_reveal(config: str) -> list[str]:
    """The serve profile's --set of Hannun's exploration key policy: revealed at each stop, for
    the recipe's serve-replay to check every decision exactly (a deployment that keeps p' from
    learning which decisions explored leaves hannun.reveal at "never")."""
    cfg = load_config(ROOT / config, overrides())
    return ["hannun.reveal=stop"] if cfg.protocol == "hannun" else []


def state_root(config: str) -> str:
    """The folder of every party's state folder of the serve profile (relative to the
    repository): each mounts only its own."""
    return f"runs/compose/{Path(config).stem}-serve"


def bundle_root(config: str) -> str:
    """The folder of every party's replay bundle (serve-bundle), which serve-replay reads: a
    state folder holds sealed checkpoints a replay does not need, and is never gathered."""
    return f"runs/compose/{Path(config).stem}-replay"


def party_names(config: str) -> list[str]:
    """Every party of config, as ROLE.INDEX."""
    return [p.name for p in load_config(ROOT / config, overrides()).parties()]


def service_name(party) -> str:
    """A party's compose service, which is also its host name: ROLE-INDEX."""
    return f"{party.role}-{party.index}"


def operator_steps(compose_file: str, config: str) -> list[Step]:
    """What an operator runs, in order: each party's key, the roster from the cards, the
    roster into every keys folder, the results folder, the owner of both, build, up, collect.
    The header shows them; the container stage (scripts/container_stage.py) runs them."""
    results, compose = results_dir(config), compose_command(compose_file)
    return [
        *setup_steps(config),
        (f"mkdir -p {results}", False, "the results folder"),
        (f"chown -R {IMAGE_USER} {keys_root(config)} {data_root(config)} {results}", False,
         f"the containers run as the image's user mpc ({IMAGE_USER}); it owns keys, data and "
         "results (or export MPCBANDIT_USER=uid:gid of another owner; not 0, root)"),
        (f"{compose} build && {compose} up", False,
         "export MPCBANDIT_STEPS=N first for a short run (N steps)"),
        (f"{compose} --profile collect run --rm collect", False, "writes summary.json beside the results"),
    ]


def setup_steps(config: str) -> list[Step]:
    """What every recipe of a file starts with: each party's key, the roster from the cards
    into every keys folder, every party's data folder."""
    parties = party_names(config)
    cfg = load_config(ROOT / config, overrides())
    stem, sets = Path(config).stem, " ".join(f"--set '{o}'" for o in overrides())
    keys = keys_dir(config, "NAME")
    cards = " ".join(f"{keys_dir(config, p)}/{p}.card.json" for p in parties)
    return [
        (f"mpcbandit keys {config} {sets} --party NAME --out {keys}", True,
         "each party's organisation, NAME one of: " + ", ".join(parties)),
        (f"mpcbandit roster {config} {sets} {cards} --out {stem}-roster.json", False,
         "whoever coordinates, from every party's public card"),
        (f"cp {stem}-roster.json {keys}/roster.json", True, "the roster beside every party's secret, every NAME"),
        (f"mpcbandit data split {config} --steps ${{MPCBANDIT_STEPS:-{own_steps(cfg)}}} "
         f"--out {data_root(config)}", False,
         "every party's own data folder, here from the built-in task, a row a step (an "
         f"organisation puts its own table in {data_root(config)}/NAME instead: docs/data.md)"),
    ]


def serve_steps(compose_file: str, config: str) -> list[Step]:
    """The serve profile's recipe: the setup steps, each organisation's API token, the state
    folders and their owner, the service's id, up, an application's calls (curl), stop, each
    party's replay bundle and serve-replay on the bundles. The header shows them after the setup steps; the
    container stage runs them (the calls from inside its network namespace)."""
    compose, state = compose_command(compose_file), state_root(config)
    ports, keys = serve_ports(config), keys_dir(config, "NAME")
    puller, rewarder = (next(n for n in ports if n.startswith(r)) for r in ("arm_puller.", "reward_holder."))
    def call(party: str, route: str, body: str | None = None) -> str:
        """An application's call of its own party: its token, its port on the host."""
        token = f"{keys_dir(config, party)}/{Path(TOKEN).name}"
        data = f" -H 'Content-Type: application/json' -d '{body}'" if body else ""
        return (f'curl -s -H "Authorization: Bearer $(cat {token})"{data} '
                f"http://127.0.0.1:{ports[party]}{route}")
    services = " ".join(serve_service(n) for n in ports)
    return [
        *setup_steps(config),
        (f"(umask 077 && openssl rand -hex 32 > {keys}/{Path(TOKEN).name})", True,
         "each organisation its API's bearer token, NAME one of: " + ", ".join(ports)),
        (f"mkdir -p {state}/NAME", True, "each party's state folder (request log, op log, "
         "checkpoints), every NAME"),
        (f"chown -R {IMAGE_USER} {keys_root(config)} {data_root(config)} {state}", False,
         f"owned by the image's user mpc ({IMAGE_USER}), as above"),
        ("export MPCBANDIT_RUN_ID=$(openssl rand -hex 16)", False,
         "the service's id, the same at every party; a party whose state folder holds the "
         "service resumes it (--start-or-resume): a later `up` needs this id or none"),
        (f"{compose} build && {compose} --profile serve up -d {services}", False,
         "the services named: with --profile serve alone the experiment's parties would start "
         "too (a service without a profile always does)"),
        (call(puller, "/v1/health"), False, "every party: ready once it met its peers; "
         "each organisation calls only its own party, with its own token"),
        (call(puller, "/v1/decisions", '{"id": "u1"}'), False, "the arm-puller's application "
         "asks for request u1's arm; each feature holder looks its slice up by id in its data "
         "folder (or its application POSTs it: /v1/contexts, docs/serve.md)"),
        (call(rewarder, "/v1/rewards", '{"id": "u1", "reward": 1}'), False,
         "the reward holder's application, any time later: the reward (0 or 1)"),
        (f"{compose} --profile serve stop", False, "SIGTERM: each party drains and exits 0, "
         "the dealer reveals its exploration keys (hannun.reveal=stop); `up -d` again resumes"),
        (f"mpcbandit serve-bundle --state {state}/NAME --out {bundle_root(config)}/NAME", True,
         "each organisation, of its own party: what a replay reads (logs, revealed keys) with "
         "a manifest of sha256, no checkpoint; sent to whoever replays, every NAME"),
        (f"mpcbandit serve-replay {bundle_root(config)} --config {config}"
         + "".join(f" --set {s}" for s in serve_reveal(config)) + f" --data {data_root(config)}",
         False, f"every decision again in float64 from every party's bundle "
         f"({bundle_root(config)}/NAME, manifests checked) and data folder (the non-private "
         "check): the arms must agree, on the keys revealed "
         "at the stops (a deployment leaves hannun.reveal at never: p' never learns which "
         "decisions explored, and serve-replay checks the greedy ones only)"),
    ]


def header(compose_file: str, config: str) -> list[str]:
    """The comment at the top of a compose file: the operator's steps, one a line."""
    lines = ["# Generated by scripts/make_compose.py; edit that, not this. Needs Compose v2",
             "# (`docker compose`; Debian's docker-compose package is v1 and rejects this file).",
             "# From the repository root, in order:"]
    for command, _, why in operator_steps(compose_file, config):
        lines.append(f"#   {command}   # {why}")
    if compose_file in SERVED:
        lines.append("# The `serve` profile (docs/serve.md): every party of the service a "
                     "long-running `mpcbandit serve`, its API on 127.0.0.1 of this host. After "
                     "the keys, roster and data steps above:")
        setup = len(setup_steps(config))
        for command, _, why in serve_steps(compose_file, config)[setup:]:
            lines.append(f"#   {command}   # {why}")
    return lines


def own_steps(cfg) -> int:
    """cfg's number of steps, under whichever key its protocol counts them (iterations, ...)."""
    key, _ = get_protocol(cfg.protocol).steps(cfg.section)
    return getattr(cfg.section, key)


def render(compose_file: str, config: str) -> str:
    """One compose file: a service per party of config and the collect service."""
    here = (ROOT / compose_file).parent
    def rel(path: str) -> str:
        """path relative to the compose file; './' first, else compose reads a volume name."""
        r = os.path.relpath(ROOT / path, here)
        return r if r.startswith("..") else f"./{r}".removesuffix("/.")
    q = json.dumps  # a JSON string is a YAML string
    cfg = load_config(ROOT / config, overrides())
    names = [p.name for p in cfg.parties()]
    lines = [*header(compose_file, config),
             f"name: {q('mpcbandit-' + Path(config).stem)}", "",
             "x-party: &party",
             f"  image: {IMAGE}",
             "  pull_policy: never   # built once, by the first service",
             f'  user: "${{MPCBANDIT_USER:-{IMAGE_USER}}}"   # the image\'s non-root user mpc',
             "  networks: [mpcbandit]", "",
             "networks:", "  mpcbandit: {}", "", "services:"]
    results = f"{rel(results_dir(config))}:{RESULTS}"
    with_data = data_parties(cfg)
    sets = [*(a for o in overrides() for a in ("--set", o)),
            "--steps", f"${{MPCBANDIT_STEPS:-{own_steps(cfg)}}}"]
    for k, p in enumerate(cfg.parties()):
        service = service_name(p)
        data = p.name in with_data  # a party that reads no data mounts none
        cmd = ["party", config, "--role", p.role, "--index", str(p.index), *sets,
               *(("--data", DATA) if data else ()), "--result", f"{RESULTS}/{p.name}.json"]
        lines += [f"  {service}:", "    <<: *party"]
        if k == 0:
            lines += [f"    build: {{context: {q(rel('.'))}}}", "    pull_policy: build"]
        lines += [f"    hostname: {service}",
                  f"    command: [{', '.join(q(c) for c in cmd)}]",
                  "    volumes:",
                  f"      - {rel(keys_dir(config, p.name))}:{KEYS}:ro",
                  *([f"      - {rel(data_root(config) + '/' + p.name)}:{DATA}:ro"] if data else []),
                  f"      - {results}"]
    cmd = ["collect", config, *(f"{RESULTS}/{n}.json" for n in names), *sets, "--out", RESULTS]
    lines += ["  collect:", "    <<: *party", "    profiles: [\"collect\"]",
              f"    command: [{', '.join(q(c) for c in cmd)}]",
              "    volumes:", f"      - {results}"]
    if compose_file in SERVED:
        lines += serve_services(config, rel, with_data)
    return "\n".join(lines) + "\n"


def serve_services(config: str, rel, with_data: set[str]) -> list[str]:
    """The serve profile's services: each party of the service runs `mpcbandit serve` under
    its host name in the experiment (the roster's address), with its own keys, data and state,
    its API published on the host's loopback only."""
    q, lines = json.dumps, []
    for name, port in serve_ports(config).items():
        role, index = name.split(".")
        host = service_name(SimpleNamespace(role=role, index=index))
        sets = [a for o in [*overrides(), *serve_overrides(port), *serve_reveal(config)]
                for a in ("--set", o)]
        cmd = ["serve", config, "--role", role, "--index", index, *sets, "--state", STATE,
               "--start-or-resume", "--run-id", "${MPCBANDIT_RUN_ID:-}",
               *(("--data", DATA) if name in with_data else ())]
        lines += [f"  {serve_service(name)}:", "    <<: *party", '    profiles: ["serve"]',
                  f"    hostname: {host}",
                  f"    networks: {{mpcbandit: {{aliases: [{q(host)}]}}}}   # its address in the roster",
                  f'    ports: ["127.0.0.1:{port}:{port}"]   # the API, on the host\'s loopback only',
                  "    stop_grace_period: 30s   # SIGTERM drains: serve.decision_timeout_s + 10 s at most",
                  f"    command: [{', '.join(q(c) for c in cmd)}]",
                  "    volumes:",
                  f"      - {rel(keys_dir(config, name))}:{KEYS}:ro",
                  *([f"      - {rel(data_root(config) + '/' + name)}:{DATA}:ro"]
                    if name in with_data else []),
                  f"      - {rel(state_root(config) + '/' + name)}:{STATE}"]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only check that the files are current")
    args = ap.parse_args()
    stale = []
    for compose_file, config in EXPERIMENTS:
        text, path = render(compose_file, config), ROOT / compose_file
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(compose_file)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path}")
    if stale:
        sys.exit(f"stale: {', '.join(stale)}: run python scripts/make_compose.py")
    if args.check:
        print("compose files are current")


if __name__ == "__main__":
    main()
