"""`docker compose up` without a container engine (none can start containers here): each
party service of a compose file runs its own command in its own network namespace, where the
service names resolve to the namespaces' addresses (/etc/netns/NS/hosts), from a folder that
holds only what the service mounts, each at a different local path; each organisation makes its
own key (`keys --party`) and the roster is built from the cards, and each its own data folder
(`data split`, each service holding only its own); the collect service merges the results, and
the summary equals the plaintext run on the same folders (demo: `--plaintext --data`; hannun:
`--plaintext --data --replay`, the replay of the dealer's secret exploration key).
$MPCBANDIT_STEPS is set, as a user would for a short run.
Where namespaces are refused, the loopback variant runs the same flow with `network.addresses`.
tests/test_compose_up_in_containers.py runs the files in real containers; in a session where
it does, the namespace variants, the demo's loopback variant and the serve profile here are
skipped (tests/conftest.py, IN_CONTAINERS_TOO: the same commands, run for real) and the
default file's loopback variant still runs (each service's folders at its own local paths)."""

import json
import re
import secrets
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from children import popen
from compose_files import ENV, assert_equals_plaintext, make_compose, services
from conftest import REPO, load_script
from deadlines import deadline
from mpcbandit.files import write_private
from mpcbandit.launch import pick_base_port
from netns import Hosts, NamespaceUnavailable

serve_app = load_script("serve_app")

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

FILES = {"demo": "deploy/compose-demo.yml", "default": "docker-compose.yml"}
STEPS = 200  # $MPCBANDIT_STEPS


def mpcbandit(*args, prefix=(), env=None, **kw):
    return popen([*prefix, sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO,
                 env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                 text=True, **kw)


def finish(proc, timeout=None):
    """(exit status, output) of proc, killed past timeout (a deadline(...): deadline(300) if
    None)."""
    try:
        out, _ = proc.communicate(timeout=deadline(300) if timeout is None else timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return proc.returncode, out


def translate(args, mounts):
    """A service's command with each container path replaced by its host folder (also a
    quoted one in a --set value: `run.keys_dir="/keys"`, `serve.token_file="/keys/api.token"`)."""
    out = []
    for arg in args:
        for inside, outside in mounts.items():
            if arg == inside or arg.startswith(inside + "/"):
                arg = str(outside) + arg[len(inside):]
            arg = re.sub(f'"{re.escape(inside)}(/[^"]*)?"',
                         lambda m: json.dumps(str(outside) + (m[1] or "")), arg)
        out.append(arg)
    return out


def sets_of(cmd):
    return [a for i, c in enumerate(cmd) if c == "--set" for a in ("--set", cmd[i + 1])]


class Deployment:
    """The compose file's services as folders on this machine, each with only its mounts."""

    def __init__(self, compose_file, root: Path, profile=None, env=None):
        """The services of profile (None: those of no profile, and collect)."""
        found = services(compose_file, {"MPCBANDIT_STEPS": str(STEPS), **(env or {})})
        self.collect = found.pop("collect")
        self.services = {n: s for n, s in found.items() if s.get("profiles", [None]) == [profile]}
        self.root = root
        self.mounts = {}
        for k, (name, svc) in enumerate(self.services.items()):
            home = root / f"host{k}" / f"org-{name}" / ("x" * k)  # different paths on purpose
            mounts = {}
            for volume in svc["volumes"]:
                spec = volume.removesuffix(":ro")
                inside = spec.rpartition(":")[2]  # the source may hold ${VAR:-default}
                mounts[inside] = home / inside.strip("/")
                mounts[inside].mkdir(parents=True, mode=0o700)
            self.mounts[name] = mounts
        self.config = next(iter(self.services.values()))["command"][1]
        self.file = compose_file

    def party(self, name):
        cmd = self.services[name]["command"]
        return cmd[cmd.index("--role") + 1] + "." + cmd[cmd.index("--index") + 1]

    def make_keys(self, extra):
        """Each organisation its key (a party with no service here too: the roster holds every
        party of the config); the roster from the cards, copied into every keys folder."""
        cards, any_cmd = [], next(iter(self.services.values()))["command"]
        folders = {self.party(name): self.mounts[name]["/keys"] for name in self.services}
        for party in make_compose.party_names(self.config):
            keys = folders.get(party, self.root / "no-service" / party)
            code, out = finish(mpcbandit("keys", self.config, "--party", party, "--out", keys,
                                         *sets_of(any_cmd), *extra))
            assert code == 0, out
            cards.append(keys / f"{party}.card.json")
        roster = self.root / "roster.json"
        code, out = finish(mpcbandit("roster", self.config, *cards, "--out", roster,
                                     *sets_of(any_cmd), *extra))
        assert code == 0, out
        for name in self.services:
            shutil.copy(roster, self.mounts[name]["/keys"] / "roster.json")

    def make_data(self) -> Path:
        """Every party's data folder (`data split`, as the file's header says), each copied
        into its own service's /data alone; the folder of all of them (for --plaintext)."""
        split = self.root / "split"
        code, out = finish(mpcbandit("data", "split", self.config, "--steps", STEPS, "--out", split))
        assert code == 0, out
        for name in self.services:
            if "/data" in self.mounts[name]:  # the parties that read data, and only theirs
                for f in (split / self.party(name)).iterdir():
                    shutil.copy(f, self.mounts[name]["/data"] / f.name)
        return split

    def up(self, extra, prefix_of=lambda k: ()):
        """Every party service's command, each in its own folders (and namespace)."""
        procs = {}
        for k, (name, svc) in enumerate(self.services.items()):
            procs[name] = mpcbandit(*translate(svc["command"], self.mounts[name]), *extra,
                                    prefix=prefix_of(k))
        outs = {name: finish(p) for name, p in procs.items()}
        assert all(code == 0 for code, _ in outs.values()), {n: o[-800:] for n, (_, o) in outs.items()}

    def collect_results(self, extra):
        """The collect service: one results folder holding every party's file."""
        shared = self.root / "collect-results"
        shared.mkdir(mode=0o700)
        for name in self.services:
            for f in self.mounts[name]["/results"].glob("*.json"):
                shutil.copy(f, shared / f.name)
        code, out = finish(mpcbandit(*translate(self.collect["command"], {"/results": shared}),
                                     *extra))
        assert code == 0, out
        return json.loads((shared / "summary.json").read_text()), shared


@pytest.mark.parametrize("which", ["demo", "default"])
def test_compose_flow_in_network_namespaces(which, tmp_path):
    dep = Deployment(FILES[which], tmp_path)
    try:
        hosts = Hosts(len(dep.services)).__enter__()
    except NamespaceUnavailable as e:
        pytest.skip(f"network namespaces refused ({e}); the loopback variant runs this flow "
                    "with network.addresses instead")
    etc = [Path("/etc/netns") / ns for ns in hosts.names]
    try:
        table = "".join(f"{addr} {name}\n" for name, addr in zip(dep.services, hosts.addresses))
        for folder in etc:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "hosts").write_text("127.0.0.1 localhost\n" + table)
        dep.make_keys([])
        data = dep.make_data()
        dep.up([], prefix_of=hosts.exec_prefix)
        summary, run_dir = dep.collect_results([])
    finally:
        hosts.__exit__(None, None, None)
        for folder in etc:
            shutil.rmtree(folder, ignore_errors=True)
    assert_equals_plaintext(summary, dep.config, STEPS, tmp_path, data=data, run_dir=run_dir)
    assert len({p["pid"] for p in summary["parties"]}) == len(dep.services)


@pytest.mark.parametrize("which", ["demo", "default"])
def test_compose_flow_on_loopback(which, tmp_path):
    dep = Deployment(FILES[which], tmp_path)
    base = pick_base_port("127.0.0.1", len(dep.services))
    table = ", ".join(f'"{dep.party(name)}" = "tcp://127.0.0.1:{base + k}"'
                      for k, name in enumerate(dep.services))
    extra = ["--set", f"network.addresses={{{table}}}"]
    dep.make_keys(extra)
    data = dep.make_data()
    dep.up(extra)
    summary, run_dir = dep.collect_results(extra)
    assert_equals_plaintext(summary, dep.config, STEPS, tmp_path, data=data, run_dir=run_dir)


class Service(Deployment):
    """The serve profile's services as folders on this machine: each party's API on a free
    port of this host's loopback (the file publishes its port there), keys, data and state."""

    def __init__(self, root: Path):
        super().__init__(FILES["default"], root, profile="serve")
        parties = make_compose.party_names(self.config)
        base = pick_base_port("127.0.0.1", len(parties) + len(self.services))
        table = ", ".join(f'"{p}" = "tcp://127.0.0.1:{base + k}"' for k, p in enumerate(parties))
        self.extra = ["--set", f"network.addresses={{{table}}}"]
        self.ports = {self.party(n): base + len(parties) + k for k, n in enumerate(self.services)}
        self.tokens = {}
        for name in self.services:  # each organisation its token, as the header says
            self.tokens[self.party(name)] = secrets.token_hex(32)
            write_private(self.mounts[name]["/keys"] / "api.token", self.tokens[self.party(name)])

    def start(self, env: dict) -> dict:
        """Every service's command, its ${VARS} from env: party -> its process."""
        found = services(self.file, env)
        return {self.party(name): mpcbandit(*translate(found[name]["command"], self.mounts[name]),
                                            *self.extra, "--set", f"serve.port={self.ports[self.party(name)]}")
                for name in self.services}

    def stop(self, procs: dict) -> None:
        """SIGTERM to every party (`docker compose stop`): each drains and exits 0."""
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        outs = {party: finish(proc, timeout=deadline(60)) for party, proc in procs.items()}
        assert all(code == 0 for code, _ in outs.values()), {p: o[-1500:] for p, (_, o) in outs.items()}

    def replay(self, split: Path) -> list[str]:
        """The header's serve-bundle of each party's state folder as it left it (its
        arguments, each party its own), and its serve-replay on those bundles gathered in one
        and on the split's data folders."""
        folder = self.root / "gathered"
        *_, bundle, replay = make_compose.serve_steps(self.file, self.config)
        bundle, state, out = bundle[0].split(), make_compose.state_root(self.config), \
            make_compose.bundle_root(self.config)
        assert bundle == ["mpcbandit", "serve-bundle", "--state", f"{state}/NAME", "--out",
                          f"{out}/NAME"]
        for name in self.services:
            done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve-bundle", "--state",
                                   str(self.mounts[name]["/state"]), "--out",
                                   str(folder / self.party(name))], cwd=REPO, env=ENV,
                                  capture_output=True, text=True, timeout=deadline(60))
            assert done.returncode == 0, done.stdout + done.stderr
        step = replay[0].split()
        assert step[:3] == ["mpcbandit", "serve-replay", out]
        assert step[step.index("--data") + 1] == make_compose.data_root(self.config)
        step[2], step[step.index("--data") + 1] = str(folder), str(split)
        return step[1:]


def test_compose_serve_profile_answers_resumes_and_agrees_with_its_replay(tmp_path):
    """The serve profile: every party `mpcbandit serve` with its own keys, data and state;
    applications ask p' for decisions (the holders look each id's slice up in their folders)
    and post the world's rewards to p''; SIGTERM (`docker compose --profile serve stop`):
    each exits 0; started again by the same commands without the service's id (a later `up`),
    each resumes from its state; serve-replay of every party's bundle agrees on every arm."""
    svc = Service(tmp_path)
    assert sorted(svc.ports) == sorted(make_compose.serve_names(svc.config))
    svc.make_keys(svc.extra)
    split = svc.make_data()
    urls = {party: f"http://127.0.0.1:{port}" for party, port in svc.ports.items()}
    world = serve_app.world_rewards(split / "environment.0" / "rewards.csv")
    ids = list(world)[:60]
    served = {}
    for env in ({"MPCBANDIT_RUN_ID": secrets.token_hex(16)}, {}):  # up; stop; up again
        procs = svc.start(env)
        try:
            serve_app.wait_ready(urls, svc.tokens, exited=lambda: ", ".join(
                f"{party} exited {proc.returncode}" for party, proc in procs.items()
                if proc.poll() is not None))
            served.update(serve_app.serve_requests(urls, svc.tokens, world, ids[:30]))
        finally:
            svc.stop(procs)
        ids = ids[30:]
    done = subprocess.run([sys.executable, "-m", "mpcbandit", *svc.replay(split), "--json"],
                          cwd=REPO, env=ENV, capture_output=True, text=True,
                          timeout=deadline(300))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["decisions"] == report["agree"] == len(served) == 60, report
    # a reward acknowledged just before a stop is applied after the next start: every one of
    # the first run's is by the end of the second (its first update follows its first decision)
    assert 30 <= report["rewards"] <= 60, report
