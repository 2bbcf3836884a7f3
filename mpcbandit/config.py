"""Experiment configs: TOML (tomllib) read into typed, validated, frozen dataclasses.

Every check runs before any process starts and fails with a ConfigError naming the key path.
A section is a dataclass; constraints sit in field metadata (``min``, ``max``, ``choices``)
and cross-field rules in an optional ``validate(self, path)`` method.
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpcbandit.errors import ConfigError
from mpcbandit.net.netspec import NET_PRESETS, NetSpec
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol

__all__ = [
    "Config",
    "RunSection",
    "NetworkSection",
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
]

def spec(default: Any = dataclasses.MISSING, *, doc: str = "", **rules: Any) -> Any:
    """A config field with a default and validation rules (min, max, choices)."""
    kw: dict[str, Any] = {"metadata": {"doc": doc, **rules}}
    if isinstance(default, (list, dict)):
        kw["default_factory"] = lambda d=default: type(d)(d)
    elif default is not dataclasses.MISSING:
        kw["default"] = default
    return field(**kw)


# ---------------------------------------------------------------- generic section builder


def type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if origin is list:
        return f"list of {type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return f"table of {type_name(typing.get_args(tp)[1])}"
    if tp is type(None):
        return "nothing"
    return getattr(tp, "__name__", str(tp))


def _check_type(value: Any, tp: Any, path: str) -> Any:
    """Return value coerced to tp (int -> float only) or raise ConfigError."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        closest = None
        for alt in typing.get_args(tp):
            try:
                return _check_type(value, alt, path)
            except ConfigError as e:
                # a table or list of the right kind with a bad item: that item's error says more
                if isinstance(value, typing.get_origin(alt) or type(None)):
                    closest = e
        if closest is not None:
            raise closest
        raise ConfigError(path, f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(path, f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")
        (item,) = typing.get_args(tp)
        return [_check_type(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")
        _, item = typing.get_args(tp)
        return {k: _check_type(v, item, f"{path}.{k}") for k, v in value.items()}
    if tp is Any:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is float and isinstance(value, float) and not math.isfinite(value):
        # TOML admits nan and inf; no setting means either (a nan deadline never expires)
        raise ConfigError(path, f"expected a finite number, got {value!r}")
    if tp is int and isinstance(value, bool):
        raise ConfigError(path, f"expected int, got bool {value!r}")
    if isinstance(tp, type) and isinstance(value, tp):
        return value
    raise ConfigError(path, f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")


#: an integer setting's maximum where its spec names none: exact as a float64 (counts enter
#: rates and confidence widths), inside the int64 of numpy and of msgpack (the hello)
INT_MAX = 2**53


def _check_rules(value: Any, rules: dict, path: str) -> None:
    if isinstance(value, list):  # a list's bounds hold for each of its items
        bounds = {k: v for k, v in rules.items() if k in ("min", "max")}
        for i, item in enumerate(value):
            _check_rules(item, bounds, f"{path}[{i}]")
        return
    if "choices" in rules and value not in rules["choices"]:
        choices = ", ".join(repr(c) for c in rules["choices"])
        raise ConfigError(path, f"{value!r} is not one of {choices}")
    if "min" in rules and value < rules["min"]:
        raise ConfigError(path, f"{value!r} is below the minimum {rules['min']!r}")
    if "max" in rules and value > rules["max"]:
        raise ConfigError(path, f"{value!r} is above the maximum {rules['max']!r}")
    if "max" not in rules and isinstance(value, int) and abs(value) > INT_MAX:
        raise ConfigError(path, f"{value!r} is beyond 2**53, the largest count a run represents")


def build_section(cls: type, data: Any, path: str) -> Any:
    """Build dataclass cls from a TOML table, checking keys, types and rules under path."""
    if not isinstance(data, dict):
        raise ConfigError(path, f"expected a table, got {type(data).__name__} {data!r}")
    hints = typing.get_type_hints(cls)
    # a field may name its TOML key in metadata (spec(..., key="lambda")) when the key is a keyword
    fields = {f.metadata.get("key", f.name): f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        allowed = ", ".join(sorted(fields))
        raise ConfigError(f"{path}.{unknown[0]}" if path else unknown[0],
                          f"unknown key (allowed here: {allowed})")
    values = {}
    for name, f in fields.items():
        key = f"{path}.{name}" if path else name
        if name not in data:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ConfigError(key, "missing key")
            continue
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            values[f.name] = build_section(tp, data[name], key)
            continue
        value = _check_type(data[name], tp, key)
        _check_rules(value, f.metadata, key)
        values[f.name] = value
    obj = cls(**values)
    validate = getattr(obj, "validate", None)
    if validate is not None:
        validate(path)
    return obj


def section_values(obj: Any) -> dict:
    """A built section as a TOML-shaped table (its file key names, nested sections as tables)."""
    out = {}
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            value = section_values(value)
        elif isinstance(value, tuple):
            value = list(value)
        elif isinstance(value, Path):
            value = str(value)
        out[f.metadata.get("key", f.name)] = value
    return out


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
                "network": section_values(self.network),
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
    allowed = {"protocol", "seed", "run", "network", name}
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ConfigError(unknown[0], f"unknown key (allowed at top level: {', '.join(sorted(allowed))})")
    seed = _check_type(raw.get("seed", 0), int, "seed")
    _check_rules(seed, {"min": 0, "max": 2**63 - 1}, "seed")
    proto = get_protocol(name)
    cfg = Config(
        protocol=name,
        seed=seed,
        run=build_section(RunSection, raw.get("run", {}), "run"),
        network=build_section(NetworkSection, raw.get("network", {}), "network"),
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
