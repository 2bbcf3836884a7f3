"""`mpcbandit data`: the parties' own data folders (docs/data.md)."""

from __future__ import annotations

from pathlib import Path

import click

from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.shipped_configs import ConfigFile

__all__ = ["data", "check_folder"]


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


@data.command()
@click.argument("config", type=ConfigFile())
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--role", required=True, help="The party's role (see `mpcbandit check`).")
@click.option("--index", type=int, default=0, show_default=True, help="Its index within the role.")
@click.option("--service", is_flag=True,
              help="The party of CONFIG's service (`mpcbandit serve`): a feature holder's folder "
                   "as it looks slices up by id, whatever the run's step count.")
@click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
              help="Bandit steps (the protocol's own step key, as `party --steps`).")
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Override a config value (dotted key, TOML literal); repeatable.")
def check(config: Path, folder: Path, role: str, index: int, service: bool, steps: int | None,
          seed: int | None, sets: tuple[str, ...]) -> None:
    """Check one party's own data folder DIR alone, as that party checks it before its hello
    (columns, bounds, NaN, ids), and print what every organisation must hold alike: the id
    list's digest and row count, which the hello compares. Exit 1 naming file, row and column."""
    try:
        cfg = load_config(config, list(sets) + ([f"seed={seed}"] if seed is not None else []))
        if steps is not None:
            from mpcbandit.protocols import with_steps

            cfg = with_steps(cfg, steps)
        lines = check_folder(cfg, role, index, folder, service)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    for line in lines:
        click.echo(line)


def check_folder(cfg, role: str, index: int, folder: Path, service: bool = False) -> list[str]:
    """What `data check` says of (role, index)'s folder, once the role's own source (the one
    its party builds before the hello) has read and checked it; its DataError otherwise."""
    from mpcbandit.data.folder import NoData
    from mpcbandit.protocols import deployed_party, get_protocol

    proto = get_protocol(cfg.protocol)
    me = deployed_party(cfg, role, index, service)
    if proto.sources is None:
        raise MpcBanditError(f"protocol {cfg.protocol} reads no data: no party of it takes a "
                             "data folder (its parties run without --data)")
    read = proto.served()["source"] if service else proto.source
    source = read(cfg, role, index, Path(folder))
    agreement = getattr(source, "agreement", None) or {}
    if isinstance(source, NoData):
        lines = [f"{me.name} reads no data of its own (docs/data.md): nothing in {folder} is "
                 "checked but its id list, if it holds one"]
    else:
        lines = [f"{me.name}: {folder} passes every check its party makes before the hello "
                 "(columns, bounds, NaN, ids)"]
    if not agreement:
        return lines + [f"{me.name}'s hello compares nothing of its data: " + (
            "it holds no id list (ids.csv)" if isinstance(source, NoData) else
            "its rows are its own (no id list), the other organisations hold others")]
    width = max(map(len, agreement))
    return lines + ["its hello compares these with every peer's: the same at every "
                    "organisation (compare them with the others before the run):"] + [
        f"  {key:<{width}}  {value}" for key, value in agreement.items()]
