"""Party processes on this host: the project's folder, free ports, fresh keys, starting a
party (killed if its launcher dies) and stopping them all. What `mpcbandit run`'s launcher
(launch.py) and `mpcbandit serve --out`'s (serve/local.py) share."""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import signal
import socket
import subprocess
import time
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.errors import MpcBanditError
from mpcbandit.net.security import write_keys

__all__ = ["project_root", "pick_base_port", "local_network", "spawn", "stop_all", "cpu_s",
           "KILL_GRACE_S"]

#: how long a party has between SIGTERM and SIGKILL when a launcher stops it
KILL_GRACE_S = 1.0
#: seconds per clock tick of /proc/PID/stat's CPU times
_TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def project_root() -> Path:
    """Directory holding the mpcbandit, parties and dealer packages (put on children's path)."""
    return Path(__file__).resolve().parent.parent


def pick_base_port(host: str, count: int, attempts: int = 200) -> int:
    """A port p such that p .. p+count-1 can all be bound on host right now."""
    rng = secrets.SystemRandom()
    # below the kernel's ephemeral range, so outgoing connections never take our ports
    low, high = _unassigned_ports()
    for _ in range(attempts):
        base = rng.randrange(low, high - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.bind((host, port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise OSError(f"no {count} consecutive free ports on {host}")


def _unassigned_ports() -> tuple[int, int]:
    """10000 up to the ephemeral range's start (no outgoing connection uses it), or
    $MPCBANDIT_PORTS=LOW-HIGH (runs started side by side pick from disjoint ranges)."""
    chosen = os.environ.get("MPCBANDIT_PORTS", "")
    if chosen:
        low, _, high = chosen.partition("-")
        if not (low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535):
            raise MpcBanditError(f"MPCBANDIT_PORTS={chosen!r}: give LOW-HIGH, 1024 <= LOW < HIGH "
                                 "<= 65535")
        return int(low), int(high)
    try:
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 32768
    return 10000, max(ephemeral_low, 12000)


def _die_with_parent() -> None:
    """In the child: get SIGKILL if the launcher dies, so no party outlives it."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def local_network(cfg: Config, out_dir: Path, *, keys: bool = True) -> Config:
    """cfg for parties on this host: free ports picked where none are configured, and (CURVE
    without a keys folder) fresh keys for every party in out_dir/keys (kept there if keys is
    False: a resumed service uses its own)."""
    parties = cfg.parties()
    if any(p.address.endswith(":0") for p in parties):
        host = parties[0].address[len("tcp://"):].rpartition(":")[0]
        cfg = cfg.with_overrides([f"network.base_port={pick_base_port(host, len(parties))}"])
        parties = cfg.parties()
    if cfg.run.security == "curve" and not cfg.run.keys_dir:
        keys_dir = (out_dir / "keys").resolve()
        if keys:
            write_keys(keys_dir, parties)  # fresh keys for this local run
        cfg = cfg.with_overrides([f"run.keys_dir={json.dumps(str(keys_dir))}"])
    return cfg


def spawn(cmd: list[str], log: Path, *, append: bool = False) -> subprocess.Popen:
    """Start a party process of this host: its output to log (0600; appended to, or a new
    log), the project on its path, killed if the launcher dies."""
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               PYTHONPATH=os.pathsep.join([str(project_root()), os.environ.get("PYTHONPATH", "")]))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC), 0o600)
    with os.fdopen(fd, "wb") as logf:
        return subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=env, preexec_fn=_die_with_parent)



def stop_all(procs: dict[str, subprocess.Popen], grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM every party still running (SIGKILL a stopped one), SIGKILL those still there
    after grace_s; every one reaped."""
    for p in procs.values():
        if p.poll() is None:
            p.send_signal(signal.SIGKILL if _is_stopped(p.pid) else signal.SIGTERM)
    end = time.monotonic() + grace_s
    for p in procs.values():
        try:
            p.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _is_stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] == "T"
    except (OSError, IndexError):
        return False


def cpu_s(pid: int) -> float | None:
    """The CPU time a process has used so far (user + system, every thread), seconds; None
    where it is gone or /proc cannot tell."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_S
    except (OSError, IndexError, ValueError):
        return None
