"""What every party of a run must agree on, as one canonical record and its digest.

The session id, the hello's config check and checkpoint identity are derived from this, so a
run's identity never depends on where a host keeps its files: fields marked ``local=True`` in
their ``spec`` (keys, data and result paths) and the whole ``[run]`` table but ``security`` are
left out.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from mpcbandit.config import Config

__all__ = ["identity_fields", "config_digest", "differing_keys"]


def _section_fields(obj: Any, path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        if f.metadata.get("local"):
            continue
        key = f"{path}.{f.metadata.get('key', f.name)}"
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            out.update(_section_fields(value, key))
        else:
            out[key] = value
    return out


def identity_fields(cfg: Config, *, addresses: bool = True) -> dict[str, Any]:
    """Flat {dotted key: value} of everything the parties of cfg must agree on.

    Without addresses, each party's entry is its role only: what a checkpoint keeps, since a
    resumed run may listen elsewhere.
    """
    fields: dict[str, Any] = {"protocol": cfg.protocol, "seed": cfg.seed,
                              "run.security": cfg.run.security}
    fields.update(_section_fields(cfg.section, cfg.protocol))
    for p in cfg.parties():
        fields[f"parties.{p.name}"] = p.address if addresses else p.role
    return json.loads(json.dumps(fields, sort_keys=True))  # canonical: tuples -> lists, etc.


def config_digest(cfg: Config) -> str:
    """Hex SHA-256 of identity_fields(cfg) in canonical JSON."""
    canon = json.dumps(identity_fields(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def differing_keys(mine: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two identity records (sorted)."""
    return sorted(k for k in set(mine) | set(theirs) if mine.get(k, None) != theirs.get(k, None)
                  or (k in mine) != (k in theirs))
