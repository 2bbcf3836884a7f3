"""A party's checkpoints: its state after an iteration, bound to the run and authenticated.

Each file holds the party's name, the iteration, the run's identity record (what the
parties agreed on in the hello: protocol, seed, section, party table) and the run's id (a nonce
made once when the run starts, kept in its run.json) beside the state, and an HMAC-SHA256 over
all of it, keyed by a secret that is made on the party's host at its first checkpoint and never
leaves it. A flipped bit, another seed's checkpoint, a config edited before `--resume`, a file
copied from another party, or one from another run of the same config and seed is refused,
naming the file and what differs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any

from mpcbandit.errors import MpcBanditError, ProtocolError
from mpcbandit.files import write_private
from mpcbandit.net.codec import pack_value, unpack_value

__all__ = ["CheckpointError", "CheckpointStore", "checkpoint_iterations", "finished", "FINISHED",
           "common_checkpoint", "prune_checkpoints"]

_MAGIC = b"MPCBCKP1"
_KEY_FILE = ".mac_key"
_SHOWN = 4


class CheckpointError(MpcBanditError):
    """A checkpoint that cannot be resumed from; names the file and why."""


#: the checkpoint of a party that has done its whole part (e.g. a key or mask generator)
FINISHED = "finished"


def finished(folder: Path) -> bool:
    """Whether the party of this checkpoint folder recorded that its part is done."""
    return (Path(folder) / f"{FINISHED}.ckpt").exists()


def checkpoint_iterations(folder: Path) -> list[int]:
    """Iterations checkpointed in a party's folder, ascending."""
    return sorted(int(p.stem) for p in Path(folder).glob("*.ckpt") if p.stem.isdigit())


class CheckpointStore:
    """One party's checkpoint folder."""

    def __init__(self, root: Path, party: str, identity: dict[str, Any], run_id: str | None = None):
        self.folder = Path(root) / party
        self.party = party
        # two runs of one config and seed differ only here: their shares and keys do not mix
        self.identity = identity if run_id is None else {**identity, "run_id": run_id}

    def path(self, iteration: int | str) -> Path:
        """The file of the checkpoint after `iteration` (or FINISHED)."""
        return self.folder / f"{iteration}.ckpt"

    def save(self, iteration: int | str, state: Any) -> Path:
        """Write the state after `iteration`, authenticated, atomically, mode 0600."""
        blob = pack_value({"party": self.party, "iteration": iteration,
                           "identity": self.identity, "state": state}, f"checkpoint {self.party}")
        mac = hmac.new(self._key(create=True), blob, hashlib.sha256).digest()
        return write_private(self.path(iteration), _MAGIC + mac + blob)

    def load(self, iteration: int | str) -> Any:
        """The state saved after `iteration`, after checking that it is this party's, of this run."""
        path = self.path(iteration)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(f"{self.party} has no checkpoint at iteration {iteration} "
                                  f"({path})") from None
        head = len(_MAGIC) + hashlib.sha256().digest_size
        if len(data) < head or not data.startswith(_MAGIC):
            raise CheckpointError(f"{path} is not an mpcbandit checkpoint")
        mac, blob = data[len(_MAGIC):head], data[head:]
        if not hmac.compare_digest(mac, hmac.new(self._key(create=False), blob, hashlib.sha256).digest()):
            raise CheckpointError(f"{path} fails its integrity check: damaged, altered, or "
                                  "written on another host (its MAC key is not this one's)")
        try:
            record = unpack_value(blob, f"checkpoint {path}")
        except ProtocolError as e:  # MAC-valid but undecodable: written by another version
            raise CheckpointError(f"{path} cannot be decoded: {e.reason}") from None
        if record.get("party") != self.party:
            raise CheckpointError(f"{path} belongs to party {record.get('party')!r}, not {self.party}")
        if record.get("iteration") != iteration:
            raise CheckpointError(f"{path} holds iteration {record.get('iteration')}, not {iteration}")
        differ = sorted(k for k in set(self.identity) | set(record["identity"])
                        if self.identity.get(k) != record["identity"].get(k))
        if differ:
            shown = "; ".join(f"{k}: checkpoint {record['identity'].get(k)!r}, this run "
                              f"{self.identity.get(k)!r}" for k in differ[:_SHOWN])
            more = f" and {len(differ) - _SHOWN} more" if len(differ) > _SHOWN else ""
            raise CheckpointError(f"{path} is of another run: {shown}{more}")
        return record["state"]

    def _key(self, create: bool) -> bytes:
        path = self.folder / _KEY_FILE
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            if not create:
                raise CheckpointError(f"no MAC key {path}: checkpoints are resumed only on the "
                                      "host that wrote them") from None
            key = secrets.token_bytes(32)
            write_private(path, key)
        if len(key) != 32:
            raise CheckpointError(f"MAC key {path} is damaged ({len(key)} bytes, expected 32)")
        return key


def common_checkpoint(out_dir: Path, names: list[str]) -> int:
    """The last iteration every party checkpointed in out_dir (a party whose part is finished
    goes on from any)."""
    folders = [out_dir / "checkpoints" / n for n in names]
    sets = [set(checkpoint_iterations(f)) for f in folders if not finished(f)]
    common = set.intersection(*sets) if sets else set()
    if not common:
        raise MpcBanditError(f"no iteration was checkpointed by all of {', '.join(names)} in "
                             f"{out_dir / 'checkpoints'}: nothing to resume")
    return max(common)


def prune_checkpoints(out_dir: Path, names: list[str]) -> None:
    """Delete checkpoints older than the last iteration every party has checkpointed."""
    try:
        keep_from = common_checkpoint(out_dir, names)
    except MpcBanditError:
        return
    for n in names:
        folder = out_dir / "checkpoints" / n
        for it in checkpoint_iterations(folder):
            if it < keep_from:
                (folder / f"{it}.ckpt").unlink(missing_ok=True)
