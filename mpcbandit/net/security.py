"""CurveZMQ for every socket: party keypairs, the roster, and an authenticator that names
each peer by its public key.

A party is identified by the key it proved (ZAP ``User-Id`` = its name in the roster),
never by the routing id it declares. Before trusting the authenticator a party checks that
it refuses a throw-away unknown key: CURVE without a running authenticator accepts anyone.
"""

from __future__ import annotations

import ipaddress
import json
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils.monitor import recv_monitor_message

from mpcbandit.errors import ConfigError, MpcBanditError

__all__ = ["Keypair", "Roster", "CurveSetup", "write_keys", "load_curve", "SecurityError",
           "PartyAuthenticator", "check_refuses_unknown_keys", "is_loopback"]

ROSTER = "roster.json"


class SecurityError(MpcBanditError):
    """Keys or the authenticator are not safe to run with; says how to fix it."""


@dataclass(frozen=True)
class Keypair:
    public: bytes  # z85, 40 bytes
    secret: bytes


@dataclass(frozen=True)
class Roster:
    """Public key of every party, by party name."""

    keys: dict[str, bytes]

    def name_of(self, public: bytes) -> str | None:
        for name, key in self.keys.items():
            if key == public:
                return name
        return None


@dataclass(frozen=True)
class CurveSetup:
    """What one party needs for CURVE: its own keypair and everyone's public keys."""

    me: str
    keypair: Keypair
    roster: Roster


def is_loopback(address: str) -> bool:
    """Whether a tcp://host:port address stays on this machine (127.0.0.0/8, ::1, localhost)."""
    host = address.removeprefix("tcp://").rpartition(":")[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name: it may resolve anywhere


def _secret_path(keys_dir: Path, name: str) -> Path:
    return keys_dir / f"{name}.key_secret"


def write_keys(keys_dir: Path, parties: list) -> Path:
    """One keypair per party (secret files mode 0600) and a roster; returns the roster path."""
    keys_dir.mkdir(parents=True, exist_ok=True)
    entries = []
    for p in parties:
        public, secret = zmq.curve_keypair()
        path = _secret_path(keys_dir, p.name)
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump({"name": p.name, "public": public.decode(), "secret": secret.decode()}, f)
        entries.append({"role": p.role, "index": p.index, "name": p.name,
                        "address": p.address, "public_key": public.decode()})
    roster = keys_dir / ROSTER
    roster.write_text(json.dumps(entries, indent=1))
    return roster


def load_curve(keys_dir: str, me: str, peers: list[str]) -> CurveSetup:
    """Load my secret key (refusing unsafe permissions) and the roster of public keys."""
    if not keys_dir:
        raise ConfigError("run.keys_dir", "security = 'curve' needs a keys directory "
                          "(make one with `mpcbandit keys CONFIG --out DIR`), "
                          "or set run.security = 'none' for a local test")
    base = Path(keys_dir)
    path = _secret_path(base, me)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigError("run.keys_dir", f"no secret key for {me}: {path} does not exist") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecurityError(f"secret key file {path} is readable by group or others "
                            f"(mode {stat.S_IMODE(mode):04o}); fix with: chmod 600 {path}")
    data = json.loads(path.read_text())
    try:
        entries = json.loads((base / ROSTER).read_text())
    except FileNotFoundError:
        raise ConfigError("run.keys_dir", f"no roster: {base / ROSTER} does not exist") from None
    keys = {e["name"]: e["public_key"].encode() for e in entries}
    missing = [p for p in [me, *peers] if p not in keys]
    if missing:
        raise ConfigError("run.keys_dir", f"roster {base / ROSTER} has no key for {', '.join(missing)}")
    if keys[me] != data["public"].encode():
        raise SecurityError(f"{path} does not match the roster's public key for {me}")
    return CurveSetup(me, Keypair(data["public"].encode(), data["secret"].encode()), Roster(keys))


class PartyAuthenticator(ThreadAuthenticator):
    """ZAP handler: admits exactly the roster's keys and names each client by its party."""

    def __init__(self, ctx: zmq.Context, roster: Roster, allowed: set[str]):
        super().__init__(ctx)
        self.roster = roster
        self.allowed = allowed
        self.refused: list[str] = []
        self._lock = threading.Lock()

    def callback(self, domain: str, key: bytes) -> bool:
        """Credentials provider: is key the public key of an allowed peer?"""
        name = self.roster.name_of(key)
        if name is not None and name in self.allowed:
            return True
        with self._lock:
            self.refused.append(key.decode(errors="replace"))
        return False

    def curve_user_id(self, client_public_key: bytes) -> str:
        return self.roster.name_of(zmq.utils.z85.encode(client_public_key)) or ""

    def start_for(self) -> "PartyAuthenticator":
        self.start()
        self.configure_curve_callback("*", credentials_provider=self)
        return self


def check_refuses_unknown_keys(ctx: zmq.Context, address: str, server_public: bytes,
                               timeout_s: float = 5.0) -> None:
    """Connect to our own CURVE server with a throw-away key; it must be refused."""
    public, secret = zmq.curve_keypair()
    probe = ctx.socket(zmq.DEALER)
    probe.setsockopt(zmq.LINGER, 0)
    probe.curve_publickey, probe.curve_secretkey, probe.curve_serverkey = public, secret, server_public
    monitor = probe.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
                                       | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL)
    try:
        probe.connect(address.replace("tcp://*:", "tcp://127.0.0.1:").replace(
            "tcp://0.0.0.0:", "tcp://127.0.0.1:"))
        if not monitor.poll(int(timeout_s * 1000)):
            raise SecurityError(f"authenticator self-check: no answer from {address} within "
                                f"{timeout_s:g} s; refusing to run without a verified authenticator")
        event = recv_monitor_message(monitor)["event"]
        if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
            raise SecurityError("authenticator self-check: an unknown CURVE key was accepted "
                                "(the authenticator is not running); aborting")
    finally:
        probe.disable_monitor()
        monitor.close(linger=0)
        probe.close(linger=0)
