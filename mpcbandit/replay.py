"""`mpcbandit run CONFIG --plaintext --replay RUN_DIR`: the non-private reference on what a
secure run revealed at its end (Hannun's exploration key), read from that run's summary.json
(a run folder, or the folder `collect --out` wrote)."""

from __future__ import annotations

import json
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.errors import ReplayError
from mpcbandit.identity import differing_keys, identity_fields
from mpcbandit.protocols import get_protocol

__all__ = ["read_secure_summary"]


def _flat(table: dict, prefix: str) -> dict:
    """{dotted key: value} of a TOML-shaped table."""
    out = {}
    for k, v in table.items():
        out.update(_flat(v, f"{prefix}.{k}") if isinstance(v, dict) else {f"{prefix}.{k}": v})
    return out


def read_secure_summary(run_dir: Path, cfg: Config) -> dict:
    """The summary of the secure run in run_dir, checked to be a run of cfg's protocol, seed and
    section (what the replay depends on), or a ReplayError naming the folder and the keys."""
    if get_protocol(cfg.protocol).replay is None:
        raise ReplayError(f"--replay: protocol {cfg.protocol} has nothing to replay (only a "
                          "secure run that reveals its randomness at the end has: hannun)")
    path = Path(run_dir) / "summary.json"
    try:
        summary = json.loads(path.read_text())
    except FileNotFoundError:
        raise ReplayError(f"--replay {run_dir}: no summary.json there (give the folder of a "
                          "finished secure run, or the folder `collect --out` wrote)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReplayError(f"--replay {run_dir}: {path} is not readable JSON "
                          f"({type(e).__name__}: {e})") from None
    if not isinstance(summary, dict) or summary.get("protocol") != cfg.protocol:
        got = summary.get("protocol") if isinstance(summary, dict) else None
        raise ReplayError(f"--replay {run_dir}: its summary is of protocol {got!r}, this config's "
                          f"is {cfg.protocol!r}")
    if summary.get("plaintext") is not False:
        raise ReplayError(f"--replay {run_dir}: that is a --plaintext run's summary; give the "
                          "secure run's folder")
    mine = {k: v for k, v in identity_fields(cfg).items()
            if k == "seed" or k.startswith(f"{cfg.protocol}.")}
    resolved = summary.get("config_resolved") or {}
    theirs = {"seed": resolved.get("seed")} | _flat(resolved.get(cfg.protocol) or {}, cfg.protocol)
    differ = differing_keys(mine, {k: theirs.get(k) for k in mine})
    if differ:
        raise ReplayError(f"--replay {run_dir}: that run's {', '.join(differ[:6])} "
                          f"{'differs' if len(differ) == 1 else 'differ'} from this config's; "
                          "give the config and --seed/--set options it ran with")
    return summary
