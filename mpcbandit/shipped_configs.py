"""The configs shipped inside the package, found by name from any folder.

They live in mpcbandit/configs (installed with the package; the clone's `configs/` is a link
to that folder, so `configs/NAME.toml` paths read the same files). A CONFIG argument that names
no existing file but a shipped config (`hannun-synthetic`, `hannun-synthetic.toml` or
`configs/hannun-synthetic.toml`) is that shipped file, from whatever folder the command runs in.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import click

from mpcbandit.errors import ConfigError

__all__ = ["SHIPPED", "ConfigFile", "config_path", "shipped_configs", "config_rows"]

#: the folder of the shipped configs, inside the installed package
SHIPPED = Path(__file__).resolve().parent / "configs"
#: what a shipped config's file is for when it names no protocol (it has a [task] table)
FRONTIER = "(frontier)"


def shipped_configs() -> list[Path]:
    """Every shipped config file, by name."""
    return sorted(SHIPPED.glob("*.toml"))


def config_path(value: str | Path) -> Path:
    """The file a CONFIG argument names: the path itself where it exists, else the shipped
    config it names; a bare name that is neither is a ConfigError listing the shipped ones."""
    path = Path(value)
    if path.exists() or path.parent not in (Path("."), Path("configs")):
        return path
    shipped = SHIPPED / (path.name if path.suffix == ".toml" else f"{path.name}.toml")
    if shipped.is_file():
        return shipped
    if path.parent == Path("."):  # a name, not a path: say which names exist
        names = ", ".join(p.stem for p in shipped_configs())
        raise ConfigError(str(value), f"no such config file here, nor a shipped config of that "
                                      f"name (shipped: {names}; `mpcbandit configs`)")
    return path  # load_config names the missing file


class ConfigFile(click.ParamType):
    """A CONFIG argument: a TOML file, or the name of a shipped config."""

    name = "CONFIG"

    def convert(self, value, param, ctx) -> Path:
        if isinstance(value, Path):
            return value
        try:
            return config_path(value)
        except ConfigError as e:
            self.fail(f"{e.key!r}: {e.reason}", param, ctx)


def _one_line(text: str) -> str:
    """A config's description: its first comment line; one that runs on into the next is cut
    at its first `:` or `;` outside parentheses (what it is, before the details)."""
    first = next((ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("#")), "")
    if first.endswith("."):
        return first
    depth = 0
    for i, ch in enumerate(first):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and ch in ":;":
            return first[:i].rstrip()
    return first


def config_rows() -> list[dict]:
    """Name, protocol (FRONTIER for `mpcbandit frontier`'s) and one line of each shipped config."""
    rows = []
    for path in shipped_configs():
        text = path.read_text(encoding="utf-8")
        raw = tomllib.loads(text)
        rows.append({"name": path.stem, "protocol": raw.get("protocol", FRONTIER),
                     "what": _one_line(text)})
    return rows
