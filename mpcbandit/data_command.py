"""`mpcbandit data`: the parties' own data folders (docs/data.md)."""

from __future__ import annotations

from pathlib import Path

import click

from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.shipped_configs import ConfigFile

__all__ = ["data"]


@click.group()
def data() -> None:
    """Each party's own data folder: what each role reads (docs/data.md)."""


@data.command()
@click.argument("config", type=ConfigFile())
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="A new folder: OUT/<role>.<index>/ for every party (0700), then "
                   "`mpcbandit run CONFIG --data OUT`.")
@click.option("--format", "fmt", type=click.Choice(["csv", "npy", "parquet"]), default="csv",
              show_default=True, help="The tables' format (parquet needs pyarrow).")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Bandit steps (the protocol's own step key, as `run --steps`).")
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a config value (dotted key, TOML literal); repeatable.")
def split(config: Path, out_dir: Path, fmt: str, steps: int | None, seed: int | None,
          sets: tuple[str, ...]) -> None:
    """Write every party's data folder from CONFIG's built-in task, each holding only that
    party's columns or rows; a run with --data OUT equals the built-in run (same --set)."""
    from mpcbandit.data.split import write_split
    from mpcbandit.protocols import with_steps

    try:
        cfg = load_config(config, list(sets) + ([f"seed={seed}"] if seed is not None else []))
        write_split(cfg if steps is None else with_steps(cfg, steps), out_dir, f".{fmt}")
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    names = sorted(p.name for p in out_dir.iterdir())
    click.echo(f"wrote {len(names)} party folders to {out_dir}: {', '.join(names)}")
