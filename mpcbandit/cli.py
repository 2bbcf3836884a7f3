"""The `mpcbandit` command: run an experiment, run one party, check a config."""

from __future__ import annotations

import importlib
import json
import logging
import os
import signal
import sys
import time
import traceback
from pathlib import Path

import click

from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError, Stopped
from mpcbandit.experiments import BENCHES, FIGURES
from mpcbandit.files import RunLock, default_run_dir
from mpcbandit.registry import PROTOCOL_MODULES
from mpcbandit.shipped_configs import ConfigFile

__all__ = ["main"]


def _net_override(net: str | None) -> list[str]:
    """--net lan | wan | none | one_way_ms=5,mbit_s=100 as a --set override."""
    if net is None:
        return []
    if "=" not in net:
        return [f"run.net={net}"]
    items = []
    for part in net.split(","):
        key, _, value = part.partition("=")
        items.append(f"{key.strip()} = {value.strip()}")
    return ["run.net={" + ", ".join(items) + "}"]


def _overrides(sets: tuple[str, ...], seed: int | None, net: str | None) -> list[str]:
    out = list(sets) + _net_override(net)
    if seed is not None:
        out.append(f"seed={seed}")
    return out


def _load(config: Path, sets: tuple[str, ...], seed: int | None, net: str | None,
          steps: int | None = None):
    """CONFIG with --set, --seed and --net applied, and --steps on its protocol's step key."""
    cfg = load_config(config, _overrides(sets, seed, net))
    if steps is None:
        return cfg
    from mpcbandit.protocols import with_steps

    return with_steps(cfg, steps)


_config_arg = click.argument("config", type=ConfigFile())
_set_opt = click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
                        help="Override a config value (dotted key, TOML literal); repeatable.")
_steps_opt = click.option("--steps", type=click.IntRange(min=1), default=None, metavar="N",
                          help="Bandit steps: sets the protocol's own key (iterations of hannun, "
                               "o3m and demo; budget of samba; horizon of feducb and jdp).")
_seed_opt = click.option("--seed", type=int, default=None, help="Override the config's seed.")
_log_opt = click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"],
                                                         case_sensitive=False),
                        default="INFO", show_default=True, help="How much a party logs.")


def _setup_logging(level: str, who: str) -> None:
    logging.basicConfig(level=level.upper(), stream=sys.stderr, force=True,
                        format=f"%(asctime)s %(levelname)s {who}: %(message)s")


_insecure_opt = click.option("--insecure", is_flag=True,
                             help="Allow run.security = 'none' beyond loopback (never across "
                                  "organisations: anyone on the network can read and forge).")


def _warn_if_not_private(cfg) -> None:
    """Print, before anything runs, each setting that makes this run not private."""
    from mpcbandit.protocols import privacy_record

    for warning in privacy_record(cfg)["warnings"]:
        click.echo(f"WARNING: this run is not private: {warning}", err=True)


_net_opt = click.option("--net", default=None, metavar="NET",
                        help="Emulated network: none | lan | wan | one_way_ms=MS,mbit_s=MBIT.")


class _LazyGroup(click.Group):
    """A group whose commands are imported only when the group is used (`mpcbandit --help` and
    `run` do not load the experiments)."""

    def __init__(self, *args, targets: dict[str, str], **kwargs):
        super().__init__(*args, **kwargs)
        self.targets = targets

    def list_commands(self, ctx) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(self.targets))

    def get_command(self, ctx, name: str):
        if name not in self.targets:
            return super().get_command(ctx, name)
        module, _, attr = self.targets[name].partition(":")
        return getattr(importlib.import_module(module), attr)


#: top-level commands kept in their own modules, imported when used
COMMANDS = {"frontier": "mpcbandit.experiments.frontier:frontier",
            "data": "mpcbandit.data_command:data",
            "keys": "mpcbandit.keys_command:keys",
            "roster": "mpcbandit.keys_command:roster",
            "serve": "mpcbandit.serve.command:serve",
            "serve-bundle": "mpcbandit.serve.command:serve_bundle",
            "serve-replay": "mpcbandit.serve.command:serve_replay"}


@click.group(cls=_LazyGroup, targets=COMMANDS,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mpcbandit", message="mpcbandit %(version)s")
def main() -> None:
    """mpcbandit: privacy-preserving bandit protocols, one OS process per party."""
    # results, logs, keys and checkpoints are private data: no file of ours is group/world readable
    os.umask(0o077)


@main.command()
@click.argument("config", type=ConfigFile(), required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Output directory (default runs/PROTOCOL-TIMESTAMP).")
@_steps_opt
@_seed_opt
@_net_opt
@_set_opt
@click.option("--plaintext", is_flag=True, help="Run the non-private reference instead.")
@click.option("--replay", "replay_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, metavar="RUN_DIR",
              help="With --plaintext: run the reference on the randomness the secure run in "
                   "RUN_DIR (a run folder, or collect's --out) revealed at its end, so it makes "
                   "that run's choices (hannun: its secret exploration).")
@_insecure_opt
@_log_opt
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=None, metavar="N",
              help="Every party saves its state every N iterations (for --resume).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Continue the run in this directory from its last checkpoint "
                                 "(its config and options are the run's own).")
@click.option("--estimate/--no-estimate", default=True, show_default=True,
              help="Before a run on an emulated network (--net), probe the config twice (the "
                   "probes within a tenth of the run) and print how long it will take, or why "
                   "the run is too short to probe.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Every party reads its own folder DATA/<role>.<index>/ (docs/data.md; "
                   "`mpcbandit data split` makes them) instead of the built-in task. With "
                   "--plaintext one process reads every folder: the non-private reference.")
def run(config: Path, out_dir: Path | None, steps: int | None, seed: int | None, net: str | None,
        sets: tuple[str, ...], plaintext: bool, replay_dir: Path | None, insecure: bool,
        log_level: str, checkpoint_every: int | None, resume_dir: Path | None, estimate: bool,
        data_dir: Path | None) -> None:
    """Run every party of CONFIG as its own process on this host and write summary.json."""
    from mpcbandit.estimate import (DurationEstimate, NotEstimated, estimate_duration,
                                    why_not_probed)
    from mpcbandit.launch import resume_run, run_local
    from mpcbandit.protocols import clock

    if (config is None) == (resume_dir is None):
        raise click.UsageError("give CONFIG, or --resume DIR (not both)")
    try:
        if resume_dir is not None:
            if sets or seed is not None or net or plaintext or checkpoint_every or steps or data_dir:
                raise click.UsageError("--resume takes the run's own config and options; give "
                                       "no --set/--seed/--net/--steps/--plaintext/"
                                       "--checkpoint-every/--data")
            resume_run(resume_dir, echo=click.echo)
            return
        if replay_dir is not None and not plaintext:
            raise click.UsageError("--replay RUN_DIR replays a secure run in the plaintext "
                                   "reference: give --plaintext too")
        cfg = _load(config, sets, seed, net, steps)
        if not plaintext:
            _warn_if_not_private(cfg)
        replay_of = None
        if replay_dir is not None:
            from mpcbandit.replay import read_secure_summary

            replay_of = read_secure_summary(replay_dir, cfg)
        if out_dir is None:
            out_dir = default_run_dir(cfg.protocol)
        expected = None
        with RunLock(out_dir, fresh=True) as lock:  # before the probes: the folder is ours
            if estimate and not plaintext and cfg.net.emulated:
                why = why_not_probed(cfg)
                outcome = (estimate_duration(cfg, insecure=insecure, echo=click.echo)
                           if why is None else NotEstimated(why))
                for line in outcome.lines(cfg.net.name):
                    click.echo(f"[mpcbandit] {line}")
                if isinstance(outcome, DurationEstimate):
                    expected = outcome
            t0 = time.perf_counter()  # as the probes were timed: start-up included
            summary = run_local(cfg, out_dir, plaintext=plaintext, echo=click.echo,
                                checkpoint_every=checkpoint_every or 0, insecure=insecure,
                                log_level=log_level, lock=lock, data_dir=data_dir,
                                replay_of=replay_of)
            took = time.perf_counter() - t0
        if expected is not None:
            click.echo(f"took {clock(took)}, start-up included (estimated "
                       f"{clock(expected.seconds)}, range {clock(expected.low_s)} to "
                       f"{clock(expected.high_s)})")
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    except KeyboardInterrupt:  # Ctrl-C: where the run is and how (or whether) it continues
        from mpcbandit.interrupted import interrupted_note

        click.echo(interrupted_note(resume_dir or out_dir), err=True)
        sys.exit(130)


def _stop_on_sigterm(signum, frame) -> None:
    """SIGTERM ends a party as an error does, at its next wait: its peers are told why, not
    left waiting. A second SIGTERM ends it at once."""
    from mpcbandit.stop import request_stop

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    request_stop("stopped by SIGTERM")


@main.command()
@_config_arg
@click.option("--role", required=True, help="Role of the party to run (see `mpcbandit check`).")
@click.option("--index", type=int, default=0, show_default=True, help="Index within the role.")
@click.option("--session", default=None,
              help="Session id shared by all parties (default: derived from the config).")
@click.option("--result", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write this party's result JSON here.")
@click.option("--progress", type=click.Path(dir_okay=False, path_type=Path), default=None,
              hidden=True)
@click.option("--checkpoint-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where this party saves checkpoints (with --checkpoint-every).")
@click.option("--checkpoint-every", type=click.IntRange(min=0), default=0, metavar="N",
              help="Save state every N iterations.")
@click.option("--resume-from", type=click.IntRange(min=0), default=None, metavar="ITERATION",
              help="Continue from this party's checkpoint at ITERATION.")
@click.option("--run-id", default=None, metavar="ID",
              help="The run instance its checkpoints belong to (with --checkpoint-every or "
                   "--resume-from): one new id per run, the same on every host and on resume.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="This party's own data folder (its role's files: docs/data.md); it reads "
                   "nothing else. Without it the role reads the built-in task.")
@_insecure_opt
@_log_opt
@_steps_opt
@_seed_opt
@_net_opt
@_set_opt
def party(config: Path, role: str, index: int, session: str | None, result: Path | None,
          progress: Path | None, checkpoint_dir: Path | None, checkpoint_every: int,
          resume_from: int | None, run_id: str | None, data_dir: Path | None, insecure: bool,
          log_level: str, steps: int | None, seed: int | None, net: str | None,
          sets: tuple[str, ...]) -> None:
    """Run one party of CONFIG (one per host or container)."""
    from mpcbandit.files import write_json
    from mpcbandit.identity import config_digest
    from parties import run_party

    _setup_logging(log_level, f"{role}.{index}")
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        cfg = _load(config, sets, seed, net, steps)
        _warn_if_not_private(cfg)
        if session is None:  # fresh per run all the same: the hello's nonces enter every link's id
            session = config_digest(cfg)[:16]
        if (checkpoint_every or resume_from is not None) and (checkpoint_dir is None or not run_id):
            raise click.UsageError("--checkpoint-every/--resume-from need --checkpoint-dir and "
                                   "--run-id (a new id per run, the same on every host and "
                                   "again on resume)")
        out = run_party(cfg, role, index, session=session, result_path=result,
                        progress_path=progress, checkpoint_dir=checkpoint_dir,
                        checkpoint_every=checkpoint_every, resume_from=resume_from,
                        insecure=insecure, run_id=run_id, data_dir=data_dir)
    except BaseException as e:  # noqa: BLE001 - reported to the launcher, then re-raised as exit
        reason = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
        if result is not None:
            try:
                write_json(result, {"role": role, "index": index, "error": reason})
            except MpcBanditError as write_error:
                click.echo(f"mpcbandit party {role}.{index}: {write_error}", err=True)
        if not isinstance(e, MpcBanditError):
            traceback.print_exc()
        click.echo(f"mpcbandit party {role}.{index} failed: {reason}", err=True)
        sys.exit(130 if isinstance(e, KeyboardInterrupt) else 143 if isinstance(e, Stopped) else 1)
    if result is None:
        click.echo(json.dumps(out["output"]))


@main.command()
@_config_arg
@_steps_opt
@_seed_opt
@_net_opt
@_set_opt
def check(config: Path, steps: int | None, seed: int | None, net: str | None,
          sets: tuple[str, ...]) -> None:
    """Validate CONFIG and print its party table."""
    try:
        cfg = _load(config, sets, seed, net, steps)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    _warn_if_not_private(cfg)
    click.echo(f"{config}: protocol {cfg.protocol}, seed {cfg.seed}, net {cfg.net.name}, "
               f"security {cfg.run.security}, deadline {cfg.run.deadline_s:g} s")
    click.echo(f"{'role':<16} {'index':>5}  address")
    for p in cfg.parties():
        addr = p.address if not p.address.endswith(":0") else f"{p.address[:-2]}:(picked by run)"
        click.echo(f"{p.role:<16} {p.index:>5}  {addr}")


@main.command()
@_config_arg
@click.argument("results", nargs=-1, required=True,
                type=click.Path(dir_okay=False, path_type=Path))
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Folder for summary.json.")
@_steps_opt
@_seed_opt
@_net_opt
@_set_opt
def collect(config: Path, results: tuple[Path, ...], out_dir: Path, steps: int | None,
            seed: int | None, net: str | None, sets: tuple[str, ...]) -> None:
    """Merge the parties' RESULT.json files of one run into summary.json (what `run` writes)."""
    from mpcbandit.collect import check_one_run, read_result, summarize_run
    from mpcbandit.results import format_summary, write_summary

    try:
        cfg = _load(config, sets, seed, net, steps)
        checked = check_one_run(cfg, [read_result(p) for p in results])
        wall = max(r.get("protocol_wall_s", 0.0) for r in checked)
        summary = summarize_run(cfg, checked, wall)
        path = write_summary(out_dir, summary)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    click.echo(format_summary(summary) + f"\nsummary: {path}")


@main.command()
def protocols() -> None:
    """List the protocols: name, paper, roles and shipped configs."""
    from mpcbandit.explain import protocol_rows

    for row in protocol_rows():
        click.echo(f"{row['name']:<8} {row['paper']}")
        click.echo(f"{'':<8} roles: {', '.join(row['roles'])}")
        click.echo(f"{'':<8} configs: {', '.join(row['configs']) or '(none shipped)'}")
    click.echo("\n`mpcbandit explain PROTOCOL` lists a protocol's config keys.")


@main.command()
def configs() -> None:
    """List the shipped configs: name, protocol and what each runs (give the name as CONFIG)."""
    from mpcbandit.shipped_configs import FRONTIER, SHIPPED, config_rows

    rows = config_rows()
    width = max(len(r["name"]) for r in rows)
    click.echo(f"{'name':<{width}}  {'protocol':<10}  what")
    for r in rows:
        click.echo(f"{r['name']:<{width}}  {r['protocol']:<10}  {r['what']}")
    click.echo(f"\nRun one with `mpcbandit run NAME` ({FRONTIER} ones with `mpcbandit frontier "
               f"NAME`); to change one, copy it: cp {SHIPPED}/NAME.toml .")


@main.command()
@click.argument("protocol", type=click.Choice(sorted(PROTOCOL_MODULES)))
def explain(protocol: str) -> None:
    """Print every config key of PROTOCOL and of [run]/[network]: type, default, meaning."""
    from mpcbandit.explain import explain_text

    click.echo(explain_text(protocol))


@main.group(cls=_LazyGroup, targets=BENCHES)
def bench() -> None:
    """Benchmarks: times, rounds and bytes, each beside its floor (raw pyzmq, a bare relay, the
    plaintext reference) measured in the same run where it has one; CSV, markdown and PNG to
    --out."""


@main.group(cls=_LazyGroup, targets=FIGURES)
def figure() -> None:
    """The papers' figures and tables: CSV, markdown and PNG side by side in --out; --paper for
    the paper's sizes."""


if __name__ == "__main__":
    main()
