"""From the parties' result files to the run's summary: check that they are one run's, one per
party, none missing or failed, then summarize (what `run` does at its end and `collect` after a
deployment)."""

from __future__ import annotations

import json
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.errors import MpcBanditError
from mpcbandit.identity import config_digest
from mpcbandit.protocols import get_protocol
from mpcbandit.results import build_summary

__all__ = ["CollectError", "read_result", "check_one_run", "summarize_run"]


class CollectError(MpcBanditError):
    """Result files that do not make one complete run; names the file or the party."""


def read_result(path: Path) -> dict:
    """One party's result file, or a CollectError naming it."""
    try:
        result = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise CollectError(f"result {path} does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CollectError(f"result {path} is not readable JSON ({type(e).__name__}: {e})") from None
    if not isinstance(result, dict) or "role" not in result or "index" not in result:
        raise CollectError(f"result {path} is not a party's result (no role and index)")
    if result.get("error"):
        raise CollectError(f"result {path}: party {result['role']}.{result['index']} failed: "
                           f"{result['error']}")
    result["_path"] = str(path)
    return result


def check_one_run(cfg: Config, results: list[dict]) -> list[dict]:
    """The results in the config's party order, after checking that they are one run of cfg."""
    names = [p.name for p in cfg.parties()]
    by_name: dict[str, dict] = {}
    digest = config_digest(cfg)
    for r in results:
        name = f"{r['role']}.{r['index']}"
        where = r.get("_path", name)
        if name not in names:
            raise CollectError(f"result {where} is of party {name}, which this config does not "
                               f"have (parties: {', '.join(names)})")
        if name in by_name:
            raise CollectError(f"two results for {name}: {by_name[name].get('_path')} and {where}")
        run = r.get("run")
        if not isinstance(run, dict) or run.get("digest") != digest:
            raise CollectError(f"result {where} is of another config than this one (digest "
                               f"{(run or {}).get('digest', 'none')!r}, expected {digest!r}): "
                               "give collect the config and --set/--steps options the parties ran with")
        by_name[name] = r
    missing = [n for n in names if n not in by_name]
    if missing:
        raise CollectError(f"no result for {', '.join(missing)}")
    for name, r in by_name.items():
        for peer, nonce in r["run"]["peer_nonces"].items():
            if by_name[peer]["run"]["nonce"] != nonce:
                raise CollectError(f"results of {name} ({r['_path']}) and {peer} "
                                   f"({by_name[peer]['_path']}) are of different runs (they did "
                                   "not greet each other)")
    return [by_name[n] for n in names]


def summarize_run(cfg: Config, results: list[dict], wall_s: float, *,
                  resumed_from: int | None = None) -> dict:
    """The summary of one checked run."""
    clean = [{k: v for k, v in r.items() if k != "_path"} for r in results]
    fields = get_protocol(cfg.protocol).summarize(cfg, clean)
    return build_summary(cfg, fields, clean, wall_s, resumed_from=resumed_from)
