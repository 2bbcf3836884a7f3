"""How a TOML table becomes a validated, frozen config section (a dataclass).

A field is declared with ``spec(default, doc=..., min=..., max=..., choices=..., local=...)``;
``build_section`` checks a table's keys, types and rules and names the key path of anything
wrong (a ConfigError). config.py builds every section of a config with it.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import field
from pathlib import Path
from typing import Any

from mpcbandit.errors import ConfigError

__all__ = ["spec", "type_name", "check_type", "check_rules", "build_section", "section_values",
           "INT_MAX"]


def spec(default: Any = dataclasses.MISSING, *, doc: str = "", **rules: Any) -> Any:
    """A config field with a default and validation rules (min, max, choices)."""
    kw: dict[str, Any] = {"metadata": {"doc": doc, **rules}}
    if isinstance(default, (list, dict)):
        kw["default_factory"] = lambda d=default: type(d)(d)
    elif default is not dataclasses.MISSING:
        kw["default"] = default
    return field(**kw)


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


def check_type(value: Any, tp: Any, path: str) -> Any:
    """Return value coerced to tp (int -> float only) or raise ConfigError."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        closest = None
        for alt in typing.get_args(tp):
            try:
                return check_type(value, alt, path)
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
        return [check_type(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(path, f"expected {type_name(tp)}, got {type(value).__name__} {value!r}")
        _, item = typing.get_args(tp)
        return {k: check_type(v, item, f"{path}.{k}") for k, v in value.items()}
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


def check_rules(value: Any, rules: dict, path: str) -> None:
    if isinstance(value, list):  # a list's bounds hold for each of its items
        bounds = {k: v for k, v in rules.items() if k in ("min", "max")}
        for i, item in enumerate(value):
            check_rules(item, bounds, f"{path}[{i}]")
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
        value = check_type(data[name], tp, key)
        check_rules(value, f.metadata, key)
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
