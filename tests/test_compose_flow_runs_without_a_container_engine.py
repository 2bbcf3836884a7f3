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
tests/test_compose_up_in_containers.py runs the files in real containers."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from compose_files import ENV, assert_equals_plaintext, services
from conftest import REPO
from mpcbandit.launch import pick_base_port
from netns import Hosts, NamespaceUnavailable

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

FILES = {"demo": "deploy/compose-demo.yml", "default": "docker-compose.yml"}
STEPS = 200  # $MPCBANDIT_STEPS


def mpcbandit(*args, prefix=(), env=None, **kw):
    return subprocess.Popen([*prefix, sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO,
                            env=env or ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, **kw)


def finish(proc, timeout=300):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return proc.returncode, out


def translate(args, mounts):
    """A service's command with each container path replaced by its host folder."""
    out = []
    for arg in args:
        for inside, outside in mounts.items():
            if arg == inside or arg.startswith(inside + "/"):
                arg = str(outside) + arg[len(inside):]
            arg = arg.replace(f'"{inside}"', json.dumps(str(outside)))
        out.append(arg)
    return out


def sets_of(cmd):
    return [a for i, c in enumerate(cmd) if c == "--set" for a in ("--set", cmd[i + 1])]


class Deployment:
    """The compose file's services as folders on this machine, each with only its mounts."""

    def __init__(self, compose_file, root: Path):
        self.services = services(compose_file, {"MPCBANDIT_STEPS": str(STEPS)})
        self.collect = self.services.pop("collect")
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

    def party(self, name):
        cmd = self.services[name]["command"]
        return cmd[cmd.index("--role") + 1] + "." + cmd[cmd.index("--index") + 1]

    def make_keys(self, extra):
        """Each organisation its key; the roster from the cards, copied into every keys folder."""
        cards = []
        for name, svc in self.services.items():
            keys = self.mounts[name]["/keys"]
            code, out = finish(mpcbandit("keys", self.config, "--party", self.party(name), "--out",
                                         keys, *sets_of(svc["command"]), *extra))
            assert code == 0, out
            cards.append(keys / f"{self.party(name)}.card.json")
        roster = self.root / "roster.json"
        any_cmd = next(iter(self.services.values()))["command"]
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
