"""`mpcbandit serve` (a private online learning service: one party, or every party on this
host), `mpcbandit serve-bundle` (what a replay reads of one party's state folder) and
`mpcbandit serve-replay` (every decision of a service recomputed in float64 from its logs).
docs/serve.md."""

from __future__ import annotations

import json
import logging
import signal
import sys
from pathlib import Path

import click

from mpcbandit.errors import MpcBanditError
from mpcbandit.shipped_configs import ConfigFile

__all__ = ["serve", "serve_bundle", "serve_replay"]


def _overrides(sets, seed, net) -> list[str]:
    from mpcbandit.cli import _overrides as overrides

    return overrides(sets, seed, net)


@click.command()
@click.argument("config", type=ConfigFile(), required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Start every party on this host, each its state in OUT/<party>/; "
                   "OUT/endpoints.json maps each party to its API's URL.")
@click.option("--role", default=None, help="Run one party of a deployment: its role ...")
@click.option("--index", type=int, default=0, show_default=True, help="... and its index.")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="One party's state folder: its request log, op log and "
                                 "checkpoints (default mpcbandit-serve/ROLE.INDEX).")
@click.option("--run-id", default=None, metavar="ID",
              help="A new service's id, the same at every party (checkpoints are bound to it).")
@click.option("--resume", is_flag=True,
              help="Continue the service in --state (one party) or --out (every party) from "
                   "its logs and checkpoints.")
@click.option("--start-or-resume", is_flag=True,
              help="One party: resume the service --state holds, or start it with --run-id if "
                   "--state holds none (one command for every start, as a container's).")
@click.option("--session", default=None, hidden=True)
@click.option("--url-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              hidden=True)
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="A feature holder looks each request's slice up by id in its own folder "
                   "(with --out: DATA/<party>/; docs/data.md) when its application posts none.")
@click.option("--insecure", is_flag=True,
              help="Allow run.security = 'none' beyond loopback.")
@click.option("--insecure-http", is_flag=True,
              help="Let an API bound beyond loopback speak plain HTTP, behind the organisation's "
                   "own TLS proxy or on a private network (serve.insecure_http = true).")
@click.option("--log-level", type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"],
                                               case_sensitive=False), default="INFO",
              show_default=True)
@click.option("--seed", type=int, default=None, help="Override the config's seed.")
@click.option("--net", default=None, metavar="NET", help="Emulated network (as `run --net`).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Override a config value.")
def serve(config, out_dir, role, index, state_dir, run_id, resume, start_or_resume, session,
          url_file, data_dir, insecure, insecure_http, log_level, seed, net, sets) -> None:
    """Serve CONFIG online: applications ask for decisions and post rewards over HTTP, and the
    model keeps learning (docs/serve.md). One party (--role, --index) or every party on this
    host (--out DIR)."""
    from mpcbandit.config import load_config

    if insecure_http:
        sets = (*sets, "serve.insecure_http=true")
    if (role is None) == (out_dir is None):
        raise click.UsageError("give --role (one party) or --out (every party on this host)")
    try:
        if out_dir is not None:
            from mpcbandit.serve.local import serve_local

            if resume and (config or sets or seed is not None or net or data_dir):
                raise click.UsageError("--resume --out DIR takes the service's own config and "
                                       "options; give no CONFIG/--set/--seed/--net/--data")
            if not resume and config is None:
                raise click.UsageError("give CONFIG (or --resume to continue the service in "
                                       "--out)")
            cfg = None if resume else load_config(config, _overrides(sets, seed, net))
            sys.exit(serve_local(cfg, out_dir, resume=resume, data_dir=data_dir,
                                 insecure=insecure, log_level=log_level, echo=click.echo))
        if config is None:
            raise click.UsageError("give CONFIG")
        if start_or_resume:
            if resume:
                raise click.UsageError("give --resume or --start-or-resume, not both")
            resume = _holds_service(state_dir or _default_state(role, index))
        _serve_one(config, role, index, state_dir, run_id, resume, session, url_file, data_dir,
                   insecure, log_level, _overrides(sets, seed, net))
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None


def _serve_one(config, role, index, state_dir, run_id, resume, session, url_file, data_dir,
               insecure, log_level, overrides) -> None:
    from mpcbandit.config import load_config
    from mpcbandit.identity import config_digest
    from parties.serving import run_serve_party

    name = f"{role}.{index}"
    logging.basicConfig(level=log_level.upper(), stream=sys.stderr, force=True,
                        format=f"%(asctime)s %(levelname)s {name}: %(message)s")
    cfg = load_config(config, overrides)
    state_dir = state_dir or _default_state(role, index)
    code = run_serve_party(cfg, role, index, state_dir=state_dir,
                           session=session or config_digest(cfg)[:16], run_id=run_id,
                           resume=resume, insecure=insecure, data_dir=data_dir,
                           url_file=url_file)
    # drained: a second SIGTERM (a launcher stopping every party) must not kill the exit
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(code)


def _default_state(role: str, index: int) -> Path:
    return Path("mpcbandit-serve") / f"{role}.{index}"


def _holds_service(state_dir: Path) -> bool:
    """Whether a party's state folder holds a service (its record), for --start-or-resume."""
    from parties.serving import STATE_FILE

    return (Path(state_dir) / STATE_FILE).exists()


@click.command("serve-bundle")
@click.option("--state", "state_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="This party's state folder (serve --state, or serve --out's "
                                  "OUT/<party>/).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False, path_type=Path),
              required=True, help="A new folder for the bundle (made 0700; an existing one "
                                  "must be empty).")
def serve_bundle(state_dir: Path, out_dir: Path) -> None:
    """Copy what serve-replay reads of this party's state folder (its logs, the dealer's
    revealed keys, its record) into a new private folder with a manifest of their sha256:
    what its organisation sends to whoever replays the service. Never its checkpoints, their
    MAC key, a key schedule or a block of a mask."""
    from mpcbandit.serve.bundle import make_bundle, manifest_digest

    try:
        manifest = make_bundle(state_dir, out_dir)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    click.echo(f"bundle of {manifest['party']} (service {manifest['run_id']!r}) in {out_dir}: "
               f"{', '.join(sorted(manifest['files']))}; manifest sha256 "
               f"{manifest_digest(out_dir)}")


@click.command("serve-replay")
@click.argument("out_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--config", "config", type=ConfigFile(), default=None,
              help="The service's config (a file or a shipped config's name), for every "
                   "party's bundle (serve-bundle) or state folder gathered as DIR/<party>/ "
                   "from its host; without it DIR is a `serve --out` folder and its run.json "
                   "says.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="With --config: the service's --set options; repeatable.")
@click.option("--data", "data_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="With --config: the parties' data folders DATA/<party>/ "
                                 "(the service's --data), where holders looked slices up.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def serve_replay(out_dir: Path, config: Path | None, sets: tuple[str, ...],
                 data_dir: Path | None, as_json: bool) -> None:
    """Recompute every decision of the service in DIR (`serve --out`'s folder, or every
    party's bundle gathered as DIR/<party>/, with --config; each manifest is checked) in
    float64 from the logs
    (each reward applied to the arm served), and report how many arms agree; a differing
    arm whose float64 score stands within the fixed point's reach of the served one's is a
    near tie. Exit status 1 if any other differs. Reads every party's log: the non-private
    check, as `run --plaintext --data` is. In Hannun's secret exploration a decision whose key
    the dealer has not revealed (hannun.reveal) is checked against the greedy arm only, and
    exit status 1 if more differ from it than exploration explains."""
    from mpcbandit.config import load_config
    from mpcbandit.protocols import get_protocol
    from mpcbandit.serve.bundle import check_bundles
    from mpcbandit.serve.record import SERVICE_FILE, check_gathered, read_service

    out_dir = Path(out_dir)
    try:
        if config is None:
            if sets or data_dir is not None:
                raise click.UsageError("--set and --data go with --config (state folders "
                                       "gathered from every party); a `serve --out` folder's "
                                       f"service has its own ({out_dir / SERVICE_FILE})")
            cfg, meta = read_service(out_dir, doing="replay")
            data = meta.get("data")
            check_gathered(out_dir, cfg, meta.get("run_id"))
        else:
            if (out_dir / SERVICE_FILE).exists():
                raise click.UsageError(f"{out_dir} is a `serve --out` folder (it holds the "
                                       f"launcher's {SERVICE_FILE}): its service has its own "
                                       "config and options, give no --config/--set/--data")
            cfg = load_config(config, list(sets))
            data = data_dir and str(data_dir)
            # bundles' manifests first: a file altered on its way is named before it is read
            check_gathered(out_dir, cfg, check_bundles(out_dir))
        report = get_protocol(cfg.protocol).served()["replay"](cfg, out_dir, data)
    except MpcBanditError as e:
        raise click.ClickException(str(e)) from None
    if as_json:
        click.echo(json.dumps(report, indent=2))
    else:
        for line in _replay_lines(report):
            click.echo(line)
    beyond = len(report.get("off_greedy", [])) > report.get("off_greedy_bound", 0)
    sys.exit(1 if report["disagree"] or beyond else 0)


#: why a decision's exploration key is not revealed, by hannun.reveal
_UNREVEALED = {"never": "never revealed (hannun.reveal = never)",
               "stop": "not revealed yet (hannun.reveal = stop: at the service's next stop)",
               "every": "not revealed yet (hannun.reveal = every: once its decisions are all "
                        "decided)"}


def _replay_lines(report: dict) -> list[str]:
    """serve-replay's report as text: what was checked exactly, what only against the greedy
    arm (and why), each near tie and each arm that differs."""
    lines = [f"{report['decisions']} decision(s) in {report['batches']} batch(es) and "
             f"{report['rewards']} reward(s) replayed in float64: {report['agree']} of "
             f"{report['decisions']} arms agree ({100 * report['agreement']:.2f} %)"]
    unknown = report.get("greedy_only", 0)
    if unknown:
        off, bound = len(report["off_greedy"]), report["off_greedy_bound"]
        why = _UNREVEALED.get(report["reveal"], f"not revealed (hannun.reveal = "
                                                 f"{report['reveal']})")
        near = sum(bool(tie.get("greedy_only")) for tie in report["near_ties"])
        verdict = ("MORE than the" if off > bound else "within the")
        lines += [f"  {report['exact']} decision(s) checked exactly, on the dealer's revealed "
                  "exploration keys",
                  f"  {unknown} decision(s) whose exploration key is {why}: whether each "
                  "explored cannot be told, so each is checked against the greedy arm only "
                  "(the model is replayed exactly all the same): "
                  f"{unknown - off - near} served the greedy arm, {off} another: {verdict} "
                  f"{bound} exploration explains (eps (A-1)/A = {report['off_greedy_rate']:.3g} "
                  f"of them on average, false alarm {report['false_alarm']:g}); which of them "
                  "explored is not checked"]
        lines += [f"  OFF GREEDY, id {o['id']!r}: served arm {o['served']}, greedy "
                  f"{o['replay']} (scores {o['gap']:.2g} apart)"
                  for o in (report["off_greedy"][:10] if off > bound else [])]
    for tie in report["near_ties"][:10]:
        lines.append(f"  near tie, id {tie['id']!r}: served arm {tie['served']}, replay "
                     f"{tie['replay']}: their float64 scores {tie['gap']:.2g} apart, within "
                     f"the fixed point's reach there ({tie['near_tie']:.2g})")
    for miss in report["disagree"][:10]:
        lines.append(f"  DIFFERS, id {miss['id']!r}: served arm {miss['served']}, replay "
                     f"{miss['replay']}" + (f" (scores {miss['gap']:.2g} apart)"
                                            if "gap" in miss else " (never logged as served)"))
    return lines
