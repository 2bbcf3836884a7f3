"""A party's replay bundle (`mpcbandit serve-bundle --state DIR --out BUNDLE`): the files of
its state folder that serve-replay reads, and nothing else, with a manifest (bundle.json:
party, run id, each file's size and sha256). Each organisation makes its own party's bundle
on its own host and sends only that: the state folder also holds what must never leave it
(checkpoints and their MAC key, the dealer's key schedule, an O3M participant's block of the
mask), which a replay does not read. `serve-replay DIR --config CONFIG` takes DIR/<party>/
bundles and checks each manifest (docs/serve.md, "serve-replay")."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from mpcbandit.errors import MpcBanditError
from mpcbandit.files import OutputError, make_private_dir, write_json
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol
from mpcbandit.serve.record import STATE_FILE, party_record

__all__ = ["MANIFEST", "make_bundle", "replay_reads", "is_bundle", "check_bundles",
           "manifest_digest"]

#: a bundle's manifest
MANIFEST = "bundle.json"
_FORMAT = 1
_CHUNK = 1 << 20


def replay_reads(party: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files required, files copied if present) that serve-replay reads of party's state
    folder, from its role in whichever served protocol has it; an error naming the role."""
    role = party.rpartition(".")[0]
    for name in sorted(PROTOCOL_MODULES):
        proto = get_protocol(name)
        if proto.serve is None:
            continue
        reads = proto.served().get("replay_reads", {})
        if role in reads:
            return reads[role]
    raise MpcBanditError(f"no served protocol has the role {role!r} (party {party!r}): "
                         "serve-bundle knows what the replay reads of each served role only")


def _record(state: Path) -> tuple[str, str]:
    """(party, run id) of the state folder's record, or an error naming the file."""
    record = party_record(state, "bundle")
    if record is None:
        raise MpcBanditError(f"{state} holds no service's state (no {STATE_FILE}): give a "
                             "party's state folder (serve --state, or serve --out's "
                             "OUT/<party>/)")
    return record


def _copy(src: Path, dst: Path) -> dict:
    """Copy src to a new file dst (mode 0600), streaming (a request log grows for months);
    the size and sha256 of the bytes copied."""
    try:
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as e:
        raise OutputError(dst, e, "create") from None
    try:
        with os.fdopen(fd, "wb") as out:
            got = _digest(src, out.write)
            out.flush()
            os.fsync(out.fileno())
    except OSError as e:
        raise OutputError(src, e, "copy") from None
    return got


def _check_result(path: Path) -> None:
    """A dealer's result.json holds what it revealed: refuse one that is not that."""
    try:
        keys = json.loads(path.read_text())["keys"]
        for k in keys:
            int(k["from"]), int(k["to"]), bytes.fromhex(k["key"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e}): it is not a list "
                             "of revealed exploration keys; cannot bundle it") from None


def _new_folder(out: Path) -> Path:
    """out as a new private folder: made 0700 (its missing parents too), or an empty folder
    of ours made 0700; a non-empty one, or one of another user, is refused by name."""
    if out.exists():
        if not out.is_dir():
            raise OutputError(out, "it is a file, not a folder", "write a bundle in")
        if any(out.iterdir()):
            raise OutputError(out, "it is not empty: give a new folder", "write a bundle in")
        if out.stat().st_uid != os.getuid():   # never change the mode of another's folder
            raise OutputError(out, "it belongs to another user: give a new folder",
                              "write a bundle in")
        os.chmod(out, 0o700)
        return out
    return make_private_dir(out)


def make_bundle(state: Path, out: Path) -> dict:
    """Copy what serve-replay reads of the party whose state folder is `state` into the new
    folder `out`, with its manifest; the manifest."""
    state, out = Path(state), Path(out)
    if not state.is_dir():
        raise MpcBanditError(f"{state} is not a folder: give a party's state folder")
    party, run_id = _record(state)
    required, optional = replay_reads(party)
    present = [n for n in required + optional if (state / n).is_file()]
    missing = [n for n in required if n not in present]
    if missing:
        raise MpcBanditError(f"{state / missing[0]} is missing: serve-replay reads it of "
                             f"{party}; restore it from a copy")
    if "result.json" in present:
        _check_result(state / "result.json")
    out = _new_folder(out)
    write_json(out / STATE_FILE, {"party": party, "run_id": run_id})
    files = {STATE_FILE: _digest(out / STATE_FILE)}
    for name in present:
        files[name] = _copy(state / name, out / name)
    manifest = {"bundle": _FORMAT, "party": party, "run_id": run_id, "files": files}
    write_json(out / MANIFEST, manifest)
    return manifest


def _digest(path: Path, also=None) -> dict:
    """The size and sha256 of a file, read once in chunks (each also given to `also`)."""
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
            if also is not None:
                also(chunk)
    return {"bytes": size, "sha256": digest.hexdigest()}


def manifest_digest(out: Path) -> str:
    """The sha256 of a bundle's manifest, for its organisation to tell the gatherer apart."""
    return _digest(Path(out) / MANIFEST)["sha256"]


def is_bundle(folder: Path) -> bool:
    """Whether folder is a replay bundle (it holds a manifest)."""
    return (Path(folder) / MANIFEST).is_file()


def _manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        if manifest["bundle"] != _FORMAT:
            raise ValueError(f"bundle format {manifest['bundle']!r}, this version reads "
                             f"{_FORMAT}")
        files = manifest["files"]
        for name, entry in files.items():
            if Path(name).name != name or name in (MANIFEST, "", ".", ".."):
                raise ValueError(f"file name {name!r}")
            str(entry["sha256"]), int(entry["bytes"])
        str(manifest["party"]), str(manifest["run_id"])
        return manifest
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e}); cannot replay "
                             "this bundle") from None


def _check_files(folder: Path, manifest: dict) -> None:
    """Each file the manifest lists is there with its size and sha256, and no other."""
    listed = manifest["files"]
    for name, entry in listed.items():
        path = folder / name
        if not path.is_file():
            raise MpcBanditError(f"{path} is missing: the bundle's manifest ({folder / MANIFEST}) "
                                 "lists it")
        got = _digest(path)
        if got != {"bytes": int(entry["bytes"]), "sha256": entry["sha256"]}:
            raise MpcBanditError(f"{path} differs from the bundle's manifest ({got['bytes']} "
                                 f"bytes, sha256 {got['sha256'][:16]}..., the manifest says "
                                 f"{entry['bytes']} bytes, {entry['sha256'][:16]}...): damaged "
                                 "or altered since serve-bundle; ask its organisation for it "
                                 "again")
    extra = sorted(p.name for p in folder.iterdir() if p.name not in listed and p.name != MANIFEST)
    if extra:
        raise MpcBanditError(f"{folder / extra[0]} is not in the bundle's manifest "
                             f"({folder / MANIFEST}): a bundle holds only what serve-bundle "
                             "copied")


def check_bundles(folder: Path) -> str | None:
    """If folder/<party>/ are bundles: check each manifest (its files' sizes and sha256, its
    party that of its folder, each party once, one run id) and return the run id; None if
    folder holds no bundle. An error names the folder and what is wrong."""
    folder = Path(folder)
    subs = sorted(p for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []
    bundles = [p for p in subs if is_bundle(p)]
    if not bundles:
        return None
    loose = [p for p in subs if not is_bundle(p) and (p / STATE_FILE).exists()]
    if loose:
        raise MpcBanditError(f"{loose[0]} is a state folder, {bundles[0]} a bundle: gather one "
                             "bundle of each party (`mpcbandit serve-bundle`), not a mix")
    manifests = {sub: _manifest(sub) for sub in bundles}
    seen: dict[str, Path] = {}
    for sub, manifest in manifests.items():   # a party twice, before either's folder name
        party = manifest["party"]
        if party in seen:
            raise MpcBanditError(f"{seen[party]} and {sub} are both bundles of {party}: give "
                                 "each party's bundle once")
        seen[party] = sub
    run_ids: dict[Path, str] = {}
    for sub, manifest in manifests.items():
        party = manifest["party"]
        if sub.name != party:
            raise MpcBanditError(f"{sub} holds the bundle of {party}, not of {sub.name}: "
                                 f"gather it as {folder / party}")
        _check_files(sub, manifest)
        record = party_record(sub, "replay") if STATE_FILE in manifest["files"] else None
        if record != (party, manifest["run_id"]):
            raise MpcBanditError(f"{sub / STATE_FILE} differs from its manifest's party and "
                                 f"run id ({sub / MANIFEST})")
        run_ids[sub] = manifest["run_id"]
    first = bundles[0]
    other = next((b for b in bundles if run_ids[b] != run_ids[first]), None)
    if other is not None:
        raise MpcBanditError(f"{other} is a bundle of service {run_ids[other]!r}, {first} of "
                             f"{run_ids[first]!r}: gather the bundles of one service")
    return run_ids[first]
