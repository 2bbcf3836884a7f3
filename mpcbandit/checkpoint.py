"""A party's checkpoints: its state after an iteration, bound to the run and authenticated.

Each file holds the party's name, the iteration, the run's identity record (what the
parties agreed on in the hello: protocol, seed, section, party table) and the run's id (a nonce
made once when the run starts, kept in its run.json) beside the state, and an HMAC-SHA256 over
all of it, keyed by a secret that is made on the party's host at its first checkpoint and never
leaves it. A flipped bit, another seed's checkpoint, a config edited before `--resume`, a file
copied from another party, or one from another run of the same config and seed is refused,
naming the file and what differs.

A service's store is also sealed (``seal``): each checkpoint encrypted with AES-GCM under a key
derived (HKDF-SHA256) from the party's CURVE secret key, which lives in run.keys_dir, not in
the state folder. The folder then holds no secret in clear (the dealer's unrevealed exploration
keys, an O3M participant's block of the mask, shares): a copy of it, or of its backups, reveals
nothing without that key file (docs/threat-model.md). The MAC key beside the checkpoints
authenticates, it does not hide.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from mpcbandit.errors import MpcBanditError, ProtocolError
from mpcbandit.files import write_private
from mpcbandit.net.codec import pack_value, unpack_value

__all__ = ["CheckpointError", "CheckpointStore", "checkpoint_iterations", "finished", "FINISHED",
           "common_checkpoint", "prune_checkpoints", "state_seal", "opened"]

_MAGIC = b"MPCBCKP1"
#: a sealed checkpoint: magic, MAC, nonce, AES-GCM ciphertext of the record
_SEALED = b"MPCBCKS1"
_NONCE = 12
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


def state_seal(secret_key: bytes, party: str, run_id: str) -> bytes:
    """The key that seals a service party's checkpoints: HKDF-SHA256 of its CURVE secret key,
    bound to the party and the service's run id."""
    info = b"mpcbandit checkpoint seal v1\0" + party.encode() + b"\0" + run_id.encode()
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret_key)


def _split(data: bytes, path: Path) -> tuple[bytes, bytes, bool]:
    """(MAC, what it covers, sealed) of a checkpoint file's bytes, or an error naming it."""
    head = len(_MAGIC) + hashlib.sha256().digest_size
    if len(data) < head or not data.startswith((_MAGIC, _SEALED)):
        raise CheckpointError(f"{path} is not an mpcbandit checkpoint")
    return data[len(_MAGIC):head], data[head:], data.startswith(_SEALED)


def _unseal(body: bytes, sealed: bool, seal: bytes | None, party: str, path: Path) -> bytes:
    """The record's bytes of a checkpoint body (decrypted if sealed), or an error naming it."""
    if not sealed:
        return body
    if seal is None:
        raise CheckpointError(f"{path} is sealed with {party}'s CURVE secret key "
                              "(run.keys_dir): resume with run.security = 'curve' and its keys")
    try:
        return AESGCM(seal).decrypt(body[:_NONCE], body[_NONCE:], _SEALED + party.encode())
    except InvalidTag:
        raise CheckpointError(f"{path} cannot be unsealed: it was sealed under another CURVE "
                              f"secret key than {party}'s in run.keys_dir (keys remade?), or "
                              "for another party or service") from None


def opened(path: Path, party: str, seal: bytes | None = None) -> dict:
    """The record a checkpoint file holds (unsealed with seal), its MAC not checked: for
    tests and forensics, never to resume from."""
    path = Path(path)
    _, body, sealed = _split(path.read_bytes(), path)
    return unpack_value(_unseal(body, sealed, seal, party, path), f"checkpoint {path}")


class CheckpointStore:
    """One party's checkpoint folder; sealed (each checkpoint encrypted) if given a seal."""

    def __init__(self, root: Path, party: str, identity: dict[str, Any], run_id: str | None = None,
                 seal: bytes | None = None):
        self.folder = Path(root) / party
        self.party = party
        # two runs of one config and seed differ only here: their shares and keys do not mix
        self.identity = identity if run_id is None else {**identity, "run_id": run_id}
        self.seal = seal

    def path(self, iteration: int | str) -> Path:
        """The file of the checkpoint after `iteration` (or FINISHED)."""
        return self.folder / f"{iteration}.ckpt"

    def save(self, iteration: int | str, state: Any) -> Path:
        """Write the state after `iteration`, authenticated, atomically, mode 0600."""
        blob = pack_value({"party": self.party, "iteration": iteration,
                           "identity": self.identity, "state": state}, f"checkpoint {self.party}")
        magic = _MAGIC
        if self.seal is not None:   # a fresh nonce each time: a checkpoint is rewritten often
            nonce = secrets.token_bytes(_NONCE)
            magic, blob = _SEALED, nonce + AESGCM(self.seal).encrypt(
                nonce, blob, _SEALED + self.party.encode())
        mac = hmac.new(self._key(create=True), blob, hashlib.sha256).digest()
        return write_private(self.path(iteration), magic + mac + blob)

    def load(self, iteration: int | str) -> Any:
        """The state saved after `iteration`, after checking that it is this party's, of this run."""
        path = self.path(iteration)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise CheckpointError(f"{self.party} has no checkpoint at iteration {iteration} "
                                  f"({path})") from None
        mac, blob, sealed = _split(data, path)
        if not hmac.compare_digest(mac, hmac.new(self._key(create=False), blob, hashlib.sha256).digest()):
            raise CheckpointError(f"{path} fails its integrity check: damaged, altered, or "
                                  "written on another host (its MAC key is not this one's)")
        # one written in clear (before stores were sealed) is read, and sealed in place
        blob = _unseal(blob, sealed, self.seal, self.party, path)
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
        if self.seal is not None and not sealed:   # written in clear before: sealed now
            self.save(iteration, record["state"])
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
