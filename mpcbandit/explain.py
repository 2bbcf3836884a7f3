"""What a user can discover from the command line: the protocols, and every config key of a
protocol with its type, default, allowed values and meaning, read from the config dataclasses
(the same ones that validate a config, so the text cannot drift from the code)."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from mpcbandit.config import NetworkSection, RunSection, ServeSection, load_config, type_name
from mpcbandit.protocols import get_protocol
from mpcbandit.registry import PROTOCOL_MODULES
from mpcbandit.shipped_configs import shipped_configs

__all__ = ["KeyDoc", "section_keys", "protocol_rows", "configs_of", "explain_text"]


@dataclasses.dataclass(frozen=True)
class KeyDoc:
    """One config key: its dotted name, type, default, rules and meaning."""

    key: str
    type: str
    default: Any
    rules: str
    doc: str


def _default(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return "(required)"


def section_keys(cls: type, path: str) -> list[KeyDoc]:
    """Every key of a config section (nested sections flattened), in declaration order."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        key = f"{path}.{f.metadata.get('key', f.name)}"
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            out += section_keys(tp, key)
            continue
        rules = []
        if "choices" in f.metadata:
            rules.append("one of " + ", ".join(repr(c) for c in f.metadata["choices"]))
        if "min" in f.metadata:
            rules.append(f">= {f.metadata['min']!r}")
        if "max" in f.metadata:
            rules.append(f"<= {f.metadata['max']!r}")
        elif int in (tp, *typing.get_args(tp)):  # the bound every integer setting has
            rules.append("<= 2**53")
        if f.metadata.get("local"):
            rules.append("local to each host (not part of the run's identity)")
        out.append(KeyDoc(key, type_name(tp), _default(f), "; ".join(rules),
                          f.metadata.get("doc", "")))
    return out


def configs_of(protocol: str) -> list[str]:
    """The shipped configs (mpcbandit/configs) that run this protocol."""
    found = []
    for path in shipped_configs():
        try:
            if load_config(path).protocol == protocol:
                found.append(path.name)
        except Exception:  # noqa: BLE001 - a config needing absent data still names its protocol
            if f'protocol = "{protocol}"' in path.read_text():
                found.append(path.name)
    return found


def protocol_rows() -> list[dict]:
    """Name, paper, roles and shipped configs of every protocol."""
    rows = []
    for name in sorted(PROTOCOL_MODULES):
        proto = get_protocol(name)
        roles = dict.fromkeys(r for r, _ in proto.roles(proto.section()))
        rows.append({"name": name, "paper": proto.paper, "roles": list(roles),
                     "configs": configs_of(name)})
    return rows


def explain_text(protocol: str) -> str:
    """Every key of [protocol], [run], [network] and [serve]: type, default, rules, meaning."""
    proto = get_protocol(protocol)
    lines = [f"{protocol}: {proto.paper}", ""]
    for title, keys in ((f"[{protocol}]", section_keys(proto.section, protocol)),
                        ("[run]", section_keys(RunSection, "run")),
                        ("[network]", section_keys(NetworkSection, "network")),
                        ("[serve]", section_keys(ServeSection, "serve"))):
        lines.append(title)
        for k in keys:
            lines.append(f"  {k.key} ({k.type}, default {k.default!r})")
            for text in (k.doc, k.rules):
                if text:
                    lines.append(f"      {text}")
        lines.append("")
    lines.append("Set any key in the config file or with --set KEY=VALUE (a TOML literal).")
    return "\n".join(lines)
