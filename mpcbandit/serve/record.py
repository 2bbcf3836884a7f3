"""What says which service a folder holds: the launcher's record (`serve --out DIR`:
DIR/run.json, the config and options of every party) and each party's own record in its state
folder (DIR/<party>/run.json: its name and the service's run id). `serve --resume --out` reads
the first; `serve-replay` the first, or, for every party's state folder gathered from its host,
the config it is given and the parties' records."""

from __future__ import annotations

import json
from pathlib import Path

from mpcbandit.config import Config, load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.protocols import served_parties
from mpcbandit.shipped_configs import config_path

__all__ = ["SERVICE_FILE", "STATE_FILE", "read_service", "party_record", "check_gathered"]

#: the launcher's record of the service in its --out folder
SERVICE_FILE = "run.json"
#: a party's record of the service its state folder belongs to
STATE_FILE = "run.json"


def read_service(out_dir: Path, doing: str = "resume") -> tuple[Config, dict]:
    """The config and record of the service the launcher started in out_dir, or an error
    naming the file, worded for what is being done with it ("resume", "replay")."""
    path = out_dir / SERVICE_FILE
    try:
        meta = json.loads(path.read_text())
        if not meta.get("serve"):
            raise MpcBanditError(f"{path} is a batch run's, not a service's: " + (
                "resume it with `mpcbandit run --resume`" if doing == "resume" else
                "serve-replay replays a service's logs (`mpcbandit run --plaintext --replay` "
                "a batch run's choices)"))
        # a record may name a shipped config, as any CONFIG argument may
        return load_config(config_path(meta["config"]), meta["overrides"]), meta
    except FileNotFoundError:
        if doing == "resume":
            raise MpcBanditError(f"{out_dir} holds no service to resume (no {SERVICE_FILE})") from None
        raise MpcBanditError(
            f"{out_dir} holds no launcher's record ({path}, what `serve --out` writes): for "
            "every party's bundle (serve-bundle) or state folder gathered in DIR/<party>/, "
            "give the service's config with --config CONFIG (and its --set and --data "
            "options)") from None
    except (KeyError, TypeError, ValueError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e}); cannot {doing} this "
                             "service") from None


def party_record(folder: Path, doing: str) -> tuple[str, str] | None:
    """(party, run id) of the record in a party's state folder (None: there is none), or an
    error naming the file, worded for what is being done with it ("resume", "replay", ...)."""
    path = Path(folder) / STATE_FILE
    try:
        record = json.loads(path.read_text())
        party, run_id = record["party"], record["run_id"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e}); cannot {doing} "
                             "this party") from None
    if not isinstance(party, str) or not isinstance(run_id, str):
        raise MpcBanditError(f"{path} is damaged (party {party!r}, run id {run_id!r})")
    return party, run_id


def check_gathered(folder: Path, cfg: Config, run_id: str | None = None) -> str | None:
    """The run id of the service whose state folders folder/<party>/ hold, from each party's
    record (its name and the run id; None if no folder holds one); an error naming the
    folder whose record is damaged, of another party or of another service (or than run_id,
    the launcher's). A log missing is named by the replay that reads it."""
    names = served_parties(cfg)
    present = [n for n in names if (folder / n).is_dir()]
    if not present:
        raise MpcBanditError(f"{folder} holds no state folder of this config's service: "
                             f"serve-replay reads {folder}/<party>/ for its parties, "
                             f"{', '.join(names)}")
    ids: dict[str, str] = {}
    for name in present:
        record = party_record(folder / name, "replay")
        if record is None:
            continue
        party, ids[name] = record
        if party != name:
            raise MpcBanditError(f"{folder / name} is the state folder of {party}, not of {name}")
    expected = run_id or next(iter(ids.values()), None)
    other = next((n for n in ids if ids[n] != expected), None)
    if other is not None:
        first = "the launcher's record" if run_id else next(iter(ids))
        raise MpcBanditError(f"{folder / other} belongs to service {ids[other]!r}, {first} to "
                             f"{expected!r}: gather the state folders of one service")
    return expected
