"""`mpcbandit keys` and `mpcbandit roster`: each party's CURVE key and the roster of what is
deployed, a batch run's parties or, with --service, its service's (`mpcbandit serve`)."""

from __future__ import annotations

from pathlib import Path

import click

from mpcbandit.cli import _config_arg, _net_opt, _overrides, _seed_opt, _set_opt
from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError

__all__ = ["keys", "roster"]

_service_opt = click.option(
    "--service", is_flag=True,
    help="The parties of CONFIG's service (`mpcbandit serve`: Hannun's and O3M's have no "
         "environment) instead of a batch run's.")


def _what(cfg, service: bool) -> tuple[str, str]:
    """How errors name what is deployed, and the note that points to the other roster."""
    from mpcbandit.protocols import deployed_parties, get_protocol

    if service:
        return "this config's service", ("; a batch run's roster (`mpcbandit party`) has every "
                                         "party of the config: give no --service")
    if get_protocol(cfg.protocol).serve is None:
        return "this config", ""
    served = ", ".join(p.name for p in deployed_parties(cfg, service=True))
    return "this config", (f"; a service's roster (`mpcbandit serve`) has only the service's "
                           f"parties ({served}): give --service")


@click.command()
@_config_arg
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for the key(s): secret files mode 0600 in a 0700 folder.")
@click.option("--party", "party_name", default=None, metavar="ROLE.INDEX",
              help="Only this party's keypair and its public card (what one organisation runs).")
@_service_opt
@_seed_opt
@_net_opt
@_set_opt
def keys(config: Path, out_dir: Path, party_name: str | None, service: bool, seed: int | None,
         net: str | None, sets: tuple[str, ...]) -> None:
    """Write CURVE keys: one party's (--party) with its public card, or every party's and the
    roster (a local run on one machine); a batch run's parties, or with --service the
    service's."""
    from mpcbandit.net.security import card_path, write_keys, write_party_key
    from mpcbandit.protocols import deployed_parties, deployed_party

    try:
        cfg = load_config(config, _overrides(sets, seed, net))
        if party_name is not None:
            role, _, index = party_name.rpartition(".")
            if not role or not index.isdigit():
                raise click.BadParameter(f"{party_name!r} is not ROLE.INDEX", param_hint="--party")
            me = deployed_party(cfg, role, int(index), service)
            write_party_key(out_dir, me)
            click.echo(f"wrote {out_dir / (me.name + '.key_secret')} (keep it on this host) and "
                       f"{card_path(out_dir, me.name)} (send it to whoever assembles the roster)")
            return
        parties = deployed_parties(cfg, service)
        roster = write_keys(out_dir, parties)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"wrote {len(parties)} keypairs and {roster}: every secret is in one "
               "folder, fit for a run on one machine; across organisations each runs "
               "`mpcbandit keys --party` instead")


@click.command()
@_config_arg
@click.argument("cards", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_file", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The roster to write (give a copy to every party's keys folder).")
@_service_opt
@_seed_opt
@_net_opt
@_set_opt
def roster(config: Path, cards: tuple[Path, ...], out_file: Path, service: bool,
           seed: int | None, net: str | None, sets: tuple[str, ...]) -> None:
    """Assemble roster.json from the public card (CARD.json...) of every party of a batch run,
    or with --service of the config's service: a card missing or extra is named."""
    from mpcbandit.net.security import roster_from_cards, write_roster
    from mpcbandit.protocols import deployed_parties

    try:
        cfg = load_config(config, _overrides(sets, seed, net))
        of, note = _what(cfg, service)
        write_roster(out_file, roster_from_cards(deployed_parties(cfg, service), list(cards),
                                                 of, note))
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"wrote {out_file} with {len(cards)} parties; copy it into each party's keys folder")
