"""`mpcbandit data split`: every party's data folder written from a config's built-in task, each
holding only that party's columns or rows (the protocol's `split` says which), so that a run
on them equals the built-in run. The helpers here write one folder's files."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from mpcbandit.data.folder import IDS_FILE
from mpcbandit.data.tables import BLOCK_ROWS, SUFFIXES, TableWriter
from mpcbandit.errors import DataError
from mpcbandit.files import OutputError, make_private_dir

__all__ = ["step_ids", "party_dir", "write_ids", "write_table", "write_rows", "write_split"]


def step_ids(rows: int) -> list[str]:
    """The ids a split gives its steps (a real id list comes from the organisations)."""
    return [f"u{t + 1}" for t in range(rows)]


def party_dir(out: Path, name: str) -> Path:
    """out/<name>/, made 0700 (a party's data is private)."""
    return make_private_dir(Path(out) / name)


def write_ids(folder: Path, ids: list[str]) -> None:
    """folder/ids.csv: the public id list, one id a row."""
    write_rows(folder / IDS_FILE, ["id"], ([i] for i in ids))


def write_rows(path: Path, header: list[str], rows: Iterable[list]) -> None:
    """A small CSV file (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(",".join(header) + "\n")
        f.writelines(",".join(map(str, row)) + "\n" for row in rows)


def write_table(folder: Path, stem: str, suffix: str, names: list[str], ids: list[str],
                values: np.ndarray | Iterable[np.ndarray], kind: str = "real") -> Path:
    """folder/stem+suffix: rows of values (an array, or one row at a time) under their ids."""
    path = folder / f"{stem}{suffix}"
    writer = TableWriter(path, names, len(ids), kind)
    block: list[np.ndarray] = []
    for row in values:
        block.append(np.asarray(row).ravel())
        if len(block) == BLOCK_ROWS:
            writer.add(ids[writer.written:writer.written + len(block)], np.stack(block))
            block = []
    if block:
        writer.add(ids[writer.written:writer.written + len(block)], np.stack(block))
    writer.close()
    if writer.written != len(ids):
        raise DataError(f"{path}: wrote {writer.written} rows for {len(ids)} ids")
    return path


def write_split(cfg, out: Path, suffix: str = ".csv") -> Path:
    """Every party's folder of cfg under out (a new or empty folder), from the built-in task."""
    from mpcbandit.protocols import get_protocol

    proto = get_protocol(cfg.protocol)
    if proto.split is None:
        raise DataError(f"protocol {cfg.protocol} reads no data: there is nothing to split")
    if suffix not in SUFFIXES:
        raise DataError(f"format {suffix!r}: one of {', '.join(SUFFIXES)}")
    out = Path(out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OutputError(out, "not an empty folder: data split writes only into a new one",
                          "write the data folders into")
    make_private_dir(out)
    proto.split(cfg, out, suffix)
    return out
