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
import pwd
import stat
import struct
import threading
from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator
from zmq.utils.monitor import recv_monitor_message

from mpcbandit.errors import ConfigError, MpcBanditError, printable
from mpcbandit.files import make_private_dir, write_json, write_private

__all__ = ["Keypair", "Roster", "CurveSetup", "write_keys", "write_party_key", "card_path",
           "roster_from_cards", "write_roster", "load_curve", "SecurityError", "curve_key",
           "PartyAuthenticator", "check_refuses_unknown_keys", "is_loopback",
           "refuse_unsafe_path"]

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


def card_path(keys_dir: Path, name: str) -> Path:
    """Where `mpcbandit keys --party` puts a party's public card."""
    return keys_dir / f"{name}.card.json"


def write_party_key(keys_dir: Path, party) -> dict:
    """One party's keypair: its secret file (0600, folder 0700) and its public card; the card."""
    make_private_dir(keys_dir)
    public, secret = zmq.curve_keypair()
    write_private(_secret_path(keys_dir, party.name), json.dumps(
        {"name": party.name, "public": public.decode(), "secret": secret.decode()}))
    card = {"name": party.name, "role": party.role, "index": party.index,
            "address": party.address, "public_key": public.decode()}
    write_json(card_path(keys_dir, party.name), card)
    return card


def write_keys(keys_dir: Path, parties: list) -> Path:
    """Every party's keypair in one folder and the roster (local runs only); the roster path."""
    entries = [write_party_key(keys_dir, p) for p in parties]
    return write_roster(keys_dir / ROSTER, entries)


def write_roster(path: Path, entries: list[dict]) -> Path:
    """Write a roster at path; a file already there is replaced only if it is a roster too
    (read by its content: `roster --out` given a secret key's path must not destroy it)."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        try:
            old = json.loads(path.read_bytes())
        except (OSError, ValueError) as e:  # ValueError: not UTF-8 or not JSON
            old = e
        if not (isinstance(old, list) and all(isinstance(entry, dict) and set(entry) == _CARD_KEYS
                                              for entry in old)):
            why = f"{type(old).__name__}: {old}" if isinstance(old, Exception) else "not a roster"
            raise SecurityError(f"{path} exists and is not a roster ({printable(why, 80)}); "
                                "nothing was written over it: give another path")
    return write_json(path, entries)


def roster_from_cards(parties: list, card_files: list[Path], of: str = "this config",
                      note: str = "") -> list[dict]:
    """The roster of what is deployed (`of`: a run, a service) from its parties' public cards:
    one per party, each matching it; `note` ends the error naming a card missing or extra."""
    expected = {p.name: p for p in parties}
    entries: dict[str, dict] = {}
    holders: dict[str, tuple[str, Path]] = {}  # public key -> the card that brought it first
    for path in card_files:
        card = _read_json(Path(path), "card")
        if not isinstance(card, dict) or set(card) != _CARD_KEYS:
            raise SecurityError(f"card {path}: expected the keys {', '.join(sorted(_CARD_KEYS))}")
        name = card["name"]
        party = expected.get(name)
        if party is None:
            raise SecurityError(f"card {path} names party {name!r}, which {of} does not have "
                                f"(parties: {', '.join(expected)}){note}")
        if name in entries:
            raise SecurityError(f"card {path}: party {name} has a card already")
        for key, want in (("role", party.role), ("index", party.index), ("address", party.address)):
            if card[key] != want:
                raise SecurityError(f"card {path}: {key} {card[key]!r} differs from the config's "
                                    f"{want!r} for {name}")
        curve_key(card["public_key"], f"card {path}: public_key")
        if card["public_key"] in holders:
            first, first_path = holders[card["public_key"]]
            raise SecurityError(f"cards {first_path} ({first}) and {path} ({name}) carry the same "
                                "public key: one of them is not its party's own, and the key's "
                                "owner would be refused as the other; ask both for their cards")
        holders[card["public_key"]] = (name, Path(path))
        entries[name] = card
    missing = [n for n in expected if n not in entries]
    if missing:
        raise SecurityError(f"no card for {', '.join(missing)}: each party's organisation runs "
                            f"`mpcbandit keys CONFIG --party NAME` and sends its card{note}")
    return [entries[n] for n in expected]


_CARD_KEYS = frozenset(("name", "role", "index", "address", "public_key"))


def curve_key(value, where: str) -> bytes:
    """value as a z85 CURVE key (40 characters for 32 bytes); a SecurityError naming `where`."""
    try:
        if len(zmq.utils.z85.decode(value.encode("ascii"))) == 32:
            return value.encode("ascii")
        why = "not 32 bytes"
    except (ValueError, KeyError, TypeError, AttributeError, struct.error) as e:
        # KeyError: a character outside z85's alphabet; struct.error: a group past 2**32
        why = f"{type(e).__name__}: {e}"
    raise SecurityError(f"{where} is not a z85 CURVE key ({printable(repr(value), 60)}: {why})")


def _read_json(path: Path, what: str):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SecurityError(f"{what} {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SecurityError(f"{what} {path} is not readable JSON ({type(e).__name__}: {e})") from None


def refuse_unsafe_path(path: Path, what: str, folder: bool = False,
                       key: str = "run.keys_dir") -> None:
    """OpenSSH's StrictModes check (safe_path) of path's real location, a sticky /tmp allowed
    above: path and every folder above it, up to this user's home or /, belong to this user or
    root; path and the folder holding a file are writable by no one else, and a higher folder
    only if sticky (no one else may rename what it holds). docs/faults.md says why. key is the
    config key that names path (said when it is missing, or is a folder that fails)."""
    # the keys folder is the setting's own: what is wrong with it names its key
    fail = (lambda why: ConfigError(key, why)) if folder else SecurityError
    try:
        real = Path(os.path.realpath(path, strict=True))
        st = real.stat()
    except FileNotFoundError:
        raise ConfigError(key, f"{what} {path} does not exist") from None
    except OSError as e:  # a component that is a file, permission denied, a name too long
        raise fail(f"{what} {path}: cannot read it ({type(e).__name__}: {e})") from None
    shown = f"{what} {path}" + (f" (really {real})" if real != Path(path).absolute() else "")
    if folder != stat.S_ISDIR(st.st_mode) or not (folder or stat.S_ISREG(st.st_mode)):
        raise fail(f"{shown} is not a {'folder' if folder else 'regular file'}")
    uid, home = os.geteuid(), _home()
    strict = {real} if folder else {real, real.parent}
    for at in [real, *real.parents]:
        st = at.stat() if at != real else st
        mode, where = stat.S_IMODE(st.st_mode), shown if at == real else f"{shown}: {at} above it"
        if st.st_uid not in (0, uid):
            raise SecurityError(f"{where} belongs to uid {st.st_uid}, neither you nor root, who "
                                "could swap in their keys; keep the keys in folders of yours")
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and (at in strict or not mode & stat.S_ISVTX):
            raise SecurityError(f"{where} is writable by group or others (mode {mode:04o}): "
                                f"anyone could swap in their keys; fix with: chmod go-w {at}")
        if at == home:
            break


def _home() -> Path | None:
    """This user's home folder, resolved (where OpenSSH's check stops), or None."""
    try:
        return Path(os.path.realpath(pwd.getpwuid(os.geteuid()).pw_dir))
    except (KeyError, OSError):
        return None


def load_curve(keys_dir: str, me: str, peers: list[str]) -> CurveSetup:
    """Load my secret key (refusing unsafe permissions) and the roster of public keys."""
    if not keys_dir:
        raise ConfigError("run.keys_dir", "security = 'curve' needs a keys directory "
                          "(make one with `mpcbandit keys CONFIG --out DIR`), "
                          "or set run.security = 'none' for a local test")
    base = Path(keys_dir)
    refuse_unsafe_path(base, "keys folder", folder=True)
    path = _secret_path(base, me)
    if not path.exists():
        raise ConfigError("run.keys_dir", f"no secret key for {me}: {path} does not exist")
    refuse_unsafe_path(path, "secret key file")
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise SecurityError(f"secret key file {path} is readable by group or others "
                            f"(mode {stat.S_IMODE(mode):04o}); fix with: chmod 600 {path}")
    if not (base / ROSTER).exists():
        raise ConfigError("run.keys_dir", f"no roster: {base / ROSTER} does not exist")
    refuse_unsafe_path(base / ROSTER, "roster")
    data = _read_json(path, "secret key file")
    entries = _read_json(base / ROSTER, "roster")
    try:
        keys = {e["name"]: curve_key(e["public_key"], f"{base / ROSTER}: {e['name']}'s public_key")
                for e in entries}
        curve_key(data["public"], f"{path}: public"), curve_key(data["secret"], f"{path}: secret")
    except (KeyError, TypeError, AttributeError) as e:
        raise SecurityError(f"{base / ROSTER} or {path} lacks a field ({e})") from None
    _refuse_shared_keys(keys, base / ROSTER)
    missing = [p for p in [me, *peers] if p not in keys]
    if missing:
        raise ConfigError("run.keys_dir", f"roster {base / ROSTER} has no key for {', '.join(missing)}")
    if keys[me] != data["public"].encode():
        raise SecurityError(f"{path} does not match the roster's public key for {me}")
    return CurveSetup(me, Keypair(data["public"].encode(), data["secret"].encode()), Roster(keys))


def _refuse_shared_keys(keys: dict[str, bytes], roster: Path) -> None:
    """A SecurityError naming both parties if two roster entries hold one public key."""
    names: dict[bytes, str] = {}
    for name, key in keys.items():
        if key in names:
            raise SecurityError(f"roster {roster}: {names[key]} and {name} have the same public "
                                "key (the key's owner would be taken for the first); rebuild it "
                                "with `mpcbandit roster` from each party's own card")
        names[key] = name


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
