"""Experiment configs: TOML (tomllib) read into typed, validated, frozen dataclasses.

Every check runs before any process starts and fails with a ConfigError naming the key path.
A section is a dataclass; constraints sit in field metadata (``min``, ``max``, ``choices``)
and cross-field rules in an optional ``validate(self, path)`` method.
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpcbandit.config_sections import (INT_MAX, build_section, check_rules, check_type,
                                       section_values, spec, type_name)
from mpcbandit.errors import ConfigError
from mpcbandit.net.netspec import NET_PRESETS, NetSpec
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol

__all__ = [
    "Config",
    "RunSection",
    "NetworkSection",
    "ServeSection",
    "NetSpec",
    "Party",
    "load_config",
    "parse_config",
    "apply_overrides",
    "parse_override",
    "build_section",
    "spec",
    "INT_MAX",
    "NET_PRESETS",
    "type_name",
]


# ---------------------------------------------------------------- runtime sections


@dataclass(frozen=True)
class RunSection:
    """How parties run: deadlines, emulated network, channel security, message cap."""

    deadline_s: float = spec(30.0, min=0.05, doc="every receive waits at most this long")
    startup_s: float = spec(60.0, min=0.05, doc="how long a party waits for its peers' hello")
    net: str | dict[str, float] = spec("none", doc="none | lan | wan | {one_way_ms, mbit_s}")
    security: str = spec("curve", choices=("none", "curve"),
                         doc="CurveZMQ on every socket unless 'none' (local tests only)")
    keys_dir: str = spec("", local=True,
                         doc="CURVE keys from `mpcbandit keys`; `run` makes fresh ones if empty")
    max_message_mb: float = spec(256.0, min=0.001, max=2048.0,
                                 doc="a message larger than this is refused, naming the peer")
    max_buffered_mb: float = spec(0.0, min=0.0, max=2**20,
                                  doc="unread bytes one peer may have waiting at a party; more is "
                                      "refused, naming the peer (0: twice what the protocol "
                                      "legitimately sends ahead, at least 64 MiB)")
    max_wall_s: float = spec(0.0, min=0.0, local=True,
                             doc="`run` stops the parties after this long (0: no cap); a run "
                                 "where no party progresses for startup_s + 4 x deadline_s "
                                 "is stopped anyway")

    def validate(self, path: str) -> None:
        self.net_spec(path)

    def net_spec(self, path: str = "run") -> NetSpec:
        """The emulated network this section names."""
        key = f"{path}.net"
        if isinstance(self.net, str):
            if self.net not in NET_PRESETS:
                raise ConfigError(key, f"{self.net!r} is not one of none, lan, wan or a table "
                                       "{one_way_ms = ..., mbit_s = ...}")
            one_way, bw = NET_PRESETS[self.net]
            return NetSpec(self.net, one_way, bw)
        extra = set(self.net) - {"one_way_ms", "mbit_s"}
        if extra:
            raise ConfigError(f"{key}.{sorted(extra)[0]}", "unknown key (allowed: one_way_ms, mbit_s)")
        if "one_way_ms" not in self.net:
            raise ConfigError(f"{key}.one_way_ms", "missing key")
        one_way_ms = self.net["one_way_ms"]
        mbit = self.net.get("mbit_s")
        if one_way_ms < 0:
            raise ConfigError(f"{key}.one_way_ms", f"{one_way_ms!r} must be >= 0")
        if mbit is not None and mbit <= 0:
            raise ConfigError(f"{key}.mbit_s", f"{mbit!r} must be > 0")
        name = f"{one_way_ms:g}ms" + (f"/{mbit:g}Mbit" if mbit else "")
        return NetSpec(name, one_way_ms / 1e3, mbit * 1e6 / 8 if mbit else None)

    @property
    def max_message_bytes(self) -> int:
        return int(self.max_message_mb * 2**20)


@dataclass(frozen=True)
class NetworkSection:
    """Where parties listen: a host and consecutive ports, or one address per party."""

    host: str = spec("127.0.0.1", doc="host of every party, or a template such as "
                                       "'{role}-{index}' (one host per party: compose services)")
    base_port: int = spec(0, min=0, max=65535, doc="0: `run` picks free ports")
    bind: str = spec("address", choices=("address", "any"),
                     doc="bind the party's own address, or all interfaces (containers)")
    addresses: dict[str, str] = spec({}, doc="party name -> tcp://host:port, overrides host/base_port")

    def validate(self, path: str) -> None:
        _check_host(self.host, f"{path}.host")


@dataclass(frozen=True)
class ServeSection:
    """`mpcbandit serve`: each party's HTTP API, its batching window, deadlines and queue."""

    bind: str = spec("127.0.0.1", local=True,
                     doc="address the party's API listens on; anything but loopback needs "
                         "token_file")
    port: int = spec(0, min=0, max=65535, local=True, doc="the API's port (0: a free one)")
    tls_cert: str = spec("", local=True,
                         doc="the API's certificate chain (PEM): with tls_key, the API speaks "
                             "HTTPS only")
    tls_key: str = spec("", local=True,
                        doc="the certificate's private key (PEM, mode 0600, in folders no one "
                            "else may write)")
    tls_client_ca: str = spec("", local=True,
                              doc="CA certificates (PEM) a caller's certificate must chain to "
                                  "(mutual TLS): the application proves itself by certificate, "
                                  "and token_file is then not required")
    insecure_http: bool = spec(False, local=True,
                               doc="let an API bound beyond loopback speak plain HTTP (behind the "
                                   "organisation's own TLS proxy, or on a private network): "
                                   "without it such an API needs tls_cert and tls_key")
    probe_port: int = spec(-1, min=-1, max=65535, local=True,
                           doc="a listener of its own for /v1/health and /metrics, on a thread "
                               "of its own so that probes answer however busy the API is (-1: "
                               "none; 0: a free port); on serve.bind, with the same token")
    token_file: str = spec("", local=True,
                           doc="file (mode 0600) holding the bearer token every request must "
                               "carry; required when bind is not a loopback address")
    max_connections: int = spec(1024, min=1, max=2**20, local=True,
                                doc="HTTP connections open at once at most; one more is answered "
                                    "503 and closed (lowered, with a warning, to what the open-"
                                    "file limit allows)")
    read_timeout_s: float = spec(10.0, min=0.01, max=3600.0, local=True,
                                 doc="a request's head must arrive within this long of its first "
                                     "byte (of the connection's opening, for the first), and its "
                                     "body within this long of its head; else the connection is "
                                     "closed (a body: 408)")
    idle_timeout_s: float = spec(60.0, min=0.01, max=86400.0, local=True,
                                 doc="a keep-alive connection with no request for this long is "
                                     "closed")
    batch_ms: float = spec(5.0, min=0.0, max=60000.0,
                           doc="requests arriving within this long of the first waiting one "
                               "go to the backend together as one batch")
    max_batch: int = spec(64, min=1, max=65536, doc="at most this many requests in one batch")
    max_update: int = spec(256, min=1, max=65536,
                           doc="at most this many rewards in one update batch: rewards "
                               "waiting are applied together, up to this many (an update's "
                               "rounds cost about the same for few as for many)")
    update_ms: float = spec(100.0, min=0.0, max=60000.0,
                            doc="rewards gather this long after the first of them is ready "
                                "before an update applies them together (at once when "
                                "max_update wait, and at a stop): fewer, larger updates")
    in_flight: int = spec(16, min=1, max=64,
                          doc="ops under way at once at most (Hannun): decision batches and "
                              "an update, each starting while the others are in their rounds; "
                              "no more than fit in the network's delay")
    decision_timeout_s: float = spec(5.0, min=0.01, max=86400.0,
                                     doc="a decision not made within this long is answered 503, "
                                         "naming the holders whose slice is missing")
    reward_timeout_s: float = spec(86400.0, min=0.01,
                                   doc="a decision with no reward within this long is closed "
                                       "without an update (counted); a later reward gets 410")
    checkpoint_every: int = spec(1000, min=1, doc="every party checkpoints its state every this "
                                 "many ops (decision, update and drop batches)")
    queue_limit: int = spec(4096, min=1, max=2**20,
                            doc="requests of one kind waiting for a batch; more are answered "
                                "429 with Retry-After")

    def validate(self, path: str) -> None:
        _check_host(self.bind, f"{path}.bind")


@dataclass(frozen=True)
class Party:
    """One process of an experiment."""

    role: str
    index: int
    address: str

    @property
    def name(self) -> str:
        return f"{self.role}.{self.index}"


@dataclass(frozen=True)
class Config:
    """A validated experiment: protocol, seed, runtime sections and the protocol's own section."""

    protocol: str
    seed: int
    run: RunSection
    network: NetworkSection
    section: Any
    raw: dict
    source: str
    serve: ServeSection = ServeSection()
    #: the --set KEY=VALUE items applied to the file (party processes get the same)
    overrides: tuple[str, ...] = ()

    @property
    def net(self) -> NetSpec:
        return self.run.net_spec()

    def with_overrides(self, items: list[str] | tuple[str, ...]) -> "Config":
        """This config with more KEY=VALUE items applied: validated again, its file not read again."""
        raw = apply_overrides(self.raw, [parse_override(o) for o in items])
        return dataclasses.replace(parse_config(raw, self.source),
                                   overrides=self.overrides + tuple(items))

    def resolved(self) -> dict:
        """The config as the run used it: every key of every section, defaults filled in."""
        return {"protocol": self.protocol, "seed": self.seed, "run": section_values(self.run),
                "network": section_values(self.network), "serve": section_values(self.serve),
                self.protocol: section_values(self.section)}

    def parties(self) -> list[Party]:
        """The party table: every process of this experiment with its address."""
        roles = get_protocol(self.protocol).roles(self.section)
        return _assign_addresses(roles, self.network)

    def party(self, role: str, index: int) -> Party:
        """The party with this role and index, or a ConfigError listing the valid ones."""
        for p in self.parties():
            if p.role == role and p.index == index:
                return p
        names = ", ".join(p.name for p in self.parties())
        raise ConfigError("--role/--index", f"no party {role}.{index} in this config (parties: {names})")


def _check_host(host: str, key: str) -> None:
    """A host name or IPv4 address, or a ConfigError saying what it is instead."""
    if not host.strip():
        raise ConfigError(key, "empty host: give an IPv4 address or a host name")
    if host.startswith("[") or host.count(":") > 1:
        raise ConfigError(key, f"{host!r} is an IPv6 address, which mpcbandit does not support "
                               "yet: give an IPv4 address or a host name")
    if ":" in host:
        raise ConfigError(key, f"{host!r} has a port: give the host alone; ports come from "
                               "network.base_port or network.addresses")


def _parse_tcp(addr: str, key: str) -> tuple[str, int]:
    if not addr.startswith("tcp://"):
        raise ConfigError(key, f"{addr!r} is not a tcp://host:port address")
    host, sep, port = addr[len("tcp://"):].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigError(key, f"{addr!r} is not a tcp://host:port address")
    _check_host(host, key)
    if not 1 <= int(port) <= 65535:
        raise ConfigError(key, f"port {port} out of range 1..65535")
    return host, int(port)


def _assign_addresses(roles: list[tuple[str, int]], net: NetworkSection) -> list[Party]:
    names = [f"{r}.{i}" for r, i in roles]
    for name in net.addresses:
        if name not in names:
            raise ConfigError(f"network.addresses.{name}",
                              f"no such party (parties: {', '.join(names)})")
    parties, seen = [], {}
    for k, (role, index) in enumerate(roles):
        name = f"{role}.{index}"
        if name in net.addresses:
            key = f"network.addresses.{name}"
            addr = net.addresses[name]
        else:
            key = "network.base_port"
            port = net.base_port + k if net.base_port else 0
            if port > 65535:
                raise ConfigError(key, f"{net.base_port} + {len(roles)} parties runs past port 65535")
            try:
                host = net.host.format(role=role, index=index)
            except (KeyError, IndexError, ValueError) as e:
                raise ConfigError("network.host", f"{net.host!r} is not a host or a template "
                                  f"using {{role}} and {{index}} ({e})") from None
            addr = f"tcp://{host}:{port}"
        if addr.endswith(":0"):  # port chosen at launch; nothing to check yet
            parties.append(Party(role, index, addr))
            continue
        host, port = _parse_tcp(addr, key)
        if (host, port) in seen:
            other, other_key = seen[(host, port)]
            blame = other_key if key == "network.base_port" else key
            raise ConfigError(blame, f"duplicate address {addr}: used by {other} and {name}")
        seen[(host, port)] = (name, key)
        parties.append(Party(role, index, addr))
    return parties


# ---------------------------------------------------------------- loading and overrides


def parse_override(item: str) -> tuple[str, Any]:
    """Parse KEY=VALUE: VALUE is a TOML literal, or a bare word read as a string."""
    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(key or item, f"--set expects KEY=VALUE with a dotted key, got {item!r}")
    try:
        value = tomllib.loads(f"v = {text.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = text.strip()
    return key, value


def apply_overrides(raw: dict, overrides: list[tuple[str, Any]]) -> dict:
    """Return a copy of raw with each dotted key set to its value."""
    out = _deepcopy(raw)
    for key, value in overrides:
        node = out
        parts = key.split(".")
        for i, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                raise ConfigError(".".join(parts[: i + 1]), "is a value, not a table: cannot set "
                                  f"{key}")
            node = child
        node[parts[-1]] = value
    return out


def _deepcopy(d: Any) -> Any:
    if isinstance(d, dict):
        return {k: _deepcopy(v) for k, v in d.items()}
    if isinstance(d, list):
        return [_deepcopy(v) for v in d]
    return d


def parse_config(raw: dict, source: str = "<config>") -> Config:
    """Validate a config table (file contents plus overrides) into a Config."""
    if "protocol" not in raw:
        raise ConfigError("protocol", "missing key")
    name = raw["protocol"]
    if not isinstance(name, str) or name not in PROTOCOL_MODULES:
        raise ConfigError("protocol", f"{name!r} is not one of {', '.join(sorted(PROTOCOL_MODULES))}")
    allowed = {"protocol", "seed", "run", "network", "serve", name}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(unknown[0], f"unknown key (allowed at top level: {', '.join(sorted(allowed))})")
    seed = check_type(raw.get("seed", 0), int, "seed")
    check_rules(seed, {"min": 0, "max": 2**63 - 1}, "seed")
    proto = get_protocol(name)
    cfg = Config(
        protocol=name,
        seed=seed,
        run=build_section(RunSection, raw.get("run", {}), "run"),
        network=build_section(NetworkSection, raw.get("network", {}), "network"),
        serve=build_section(ServeSection, raw.get("serve", {}), "serve"),
        section=build_section(proto.section, raw.get(name, {}), name),
        raw=raw,
        source=source,
    )
    cfg.parties()  # validates addresses and the party table
    return cfg


def load_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read a TOML config file, apply --set overrides, validate."""
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(str(path), "config file not found") from None
    except IsADirectoryError:
        raise ConfigError(str(path), "is a folder, not a config file") from None
    except PermissionError:
        raise ConfigError(str(path), "config file not readable (permission denied)") from None
    except UnicodeDecodeError as e:
        raise ConfigError(str(path), f"not UTF-8 text (byte {e.start}): TOML files are UTF-8") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(str(path), f"not valid TOML: {e}") from None
    raw = apply_overrides(raw, [parse_override(o) for o in overrides])
    return dataclasses.replace(parse_config(raw, str(path)), overrides=tuple(overrides))
