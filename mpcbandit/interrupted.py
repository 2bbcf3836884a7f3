"""What an interrupted run leaves behind, said when Ctrl-C stops `mpcbandit run`: its folder,
and the `--resume` command that continues it with the iteration it continues from, or why no
command can."""

from __future__ import annotations

import json
from pathlib import Path

from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.launch import common_checkpoint
from mpcbandit.protocols import get_protocol

__all__ = ["interrupted_note"]


def interrupted_note(out_dir: Path | None) -> str:
    """The lines to print when a run in out_dir (None: not chosen yet) was interrupted."""
    if out_dir is None:
        return "interrupted before the run started: nothing was written"
    return f"interrupted: the run's folder is {out_dir}\n{_resumable(Path(out_dir))}"


def _resumable(out_dir: Path) -> str:
    """Whether and from where `run --resume out_dir` continues the run, read from its folder."""
    try:
        meta = json.loads((out_dir / "run.json").read_text())
        cfg = load_config(meta["config"], meta["overrides"])
        every = int(meta["checkpoint_every"])
    except FileNotFoundError:
        return ("it cannot be resumed: it holds no run.json (a --plaintext reference, or a run "
                "stopped before its parties started); start it again")
    except (OSError, ValueError, KeyError, TypeError, MpcBanditError) as e:
        return f"it cannot be resumed: its run.json cannot be read ({type(e).__name__}: {e})"
    proto = get_protocol(cfg.protocol)
    if not every:
        if not proto.checkpoints:
            return (f"it cannot be resumed: protocol {cfg.protocol} cannot checkpoint "
                    f"({proto.no_checkpoints_because})")
        return ("it cannot be resumed: it saved no checkpoints (a run started with "
                "--checkpoint-every N can be)")
    try:
        start = common_checkpoint(out_dir, [p.name for p in cfg.parties()])
    except MpcBanditError:
        return (f"it cannot be resumed yet: no iteration was checkpointed by every party (one "
                f"every {every} iterations); start it again")
    return f"`mpcbandit run --resume {out_dir}` continues it from iteration {start}"
