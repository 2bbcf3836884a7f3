"""A party's own data folder: the public id list that orders the steps, and its tables read in
step order, checked before the first step.

The id list (``ids.csv``: a header ``id``, then one id a row, the order of the steps) is public:
every party of a vertical protocol holds the same copy, and its digest and length are in the
hello (``data.ids``, ``data.rows``), so parties holding different lists refuse to start, naming
the peer. A table aligned to it must hold each listed id exactly once and no other id; its rows
may come in any order. In the list's order it is streamed (bounded memory); in another order
the party holds it in memory, sorted by the list. A table with no id list (a horizontal
protocol's own rows) gives its rows to the steps in file order.
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpcbandit.data import open_data_file
from mpcbandit.data.stray import note_read
from mpcbandit.data.tables import Block, TableFile, check_ids, find_table
from mpcbandit.errors import DataError

__all__ = ["IDS_FILE", "BUILTIN", "IdList", "NoData", "StepTable", "RowsById", "read_id_list",
           "party_folder", "own_folders", "no_data", "load_steps"]

IDS_FILE = "ids.csv"
#: what a role reading the built-in task declares in the hello in place of an id list
BUILTIN = {"data.ids": "built-in task"}


@dataclass(frozen=True)
class IdList:
    """The ordered ids of the steps, from a party's ids.csv."""

    path: Path
    ids: list[str]
    digest: str

    @property
    def rows(self) -> int:
        return len(self.ids)

    def agreement(self) -> dict:
        """What the hello carries of it: every party must hold the same list."""
        return {"data.ids": self.digest, "data.rows": self.rows}


def party_folder(folder: Path, party: str) -> Path:
    """folder, if it is a readable folder; a DataError naming it and the party otherwise."""
    try:
        if not Path(folder).is_dir():
            raise DataError(f"{party}: its data folder {folder} does not exist or is not a folder")
        next(iter(Path(folder).iterdir()), None)
    except OSError as e:
        raise DataError(f"{party}: cannot read its data folder {folder} ({type(e).__name__}: {e})") from None
    return Path(folder)


def own_folders(data_dir: Path, parties: list[str]) -> None:
    """A DataError naming two parties and the real folder if their folders data_dir/<party> are
    one folder: one a link to the other's, or both links to a third."""
    seen: dict[tuple[int, int], str] = {}
    for name in parties:
        folder = Path(data_dir) / name
        try:
            st = folder.stat()
        except OSError:
            continue  # a folder missing or unreadable is its party's to name, when it reads it
        # by device and inode, not by path: a bind mount or a link in any component aliases too
        key = (st.st_dev, st.st_ino)
        if key in seen:
            first = Path(data_dir) / seen[key]
            raise DataError(f"--data: parties {seen[key]} and {name} would read the same data: "
                            f"{first} and {folder} are one folder, {folder.resolve()} (each party "
                            "reads a folder of its own; a link to a folder elsewhere is fine)")
        seen[key] = name


def read_id_list(folder: Path, party: str) -> IdList:
    """folder/ids.csv, checked: a header 'id', then unique ids of at most MAX_ID_CHARS."""
    path = party_folder(folder, party) / IDS_FILE
    note_read(path.parent, Path(IDS_FILE).stem)
    h = hashlib.sha256()
    with open_data_file(path, text=True) as f:
        try:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None or [c.strip() for c in header] != ["id"]:
                raise DataError(f"{path}: an id list is one column with the header 'id' (read "
                                f"{header!r:.60})")
            ids = []
            for row, line in enumerate(reader, start=1):
                if len(line) != 1:
                    raise DataError(f"{path}: row {row} has {len(line)} cells, an id list one")
                ids.append(line[0])
                # length-prefixed: an id may hold a newline, so joining them would let two
                # different lists hash alike
                cell = line[0].encode()
                h.update(len(cell).to_bytes(8, "big") + cell)
        except (csv.Error, UnicodeDecodeError) as e:
            raise DataError(f"{path}: not CSV text ({e})") from None
    if not ids:
        raise DataError(f"{path}: no ids")
    check_ids(ids, path, 0)
    _refuse_duplicates(ids, f"{party}: {path}")
    return IdList(path, ids, "sha256:" + h.hexdigest()[:32])


@dataclass(frozen=True)
class NoData:
    """The source of a role that reads no data: only what it declares in the hello."""

    agreement: dict


class RowsById:
    """A party's table held in memory, its rows looked up by request id (`mpcbandit serve
    --data`: a request's features that its application did not post)."""

    def __init__(self, rows: np.ndarray, ids: list[str], agreement: dict):
        self.rows = np.asarray(rows, dtype=np.float64)
        self.position = {rid: t for t, rid in enumerate(ids)}
        self.agreement = agreement

    def features_of(self, rid: str) -> np.ndarray | None:
        """The row of request rid, or None if the folder does not hold it."""
        t = self.position.get(rid)
        return None if t is None else self.rows[t]


def no_data(folder: Path | None, party: str) -> NoData:
    """A role without tables of its own: it declares its copy of the id list if its folder holds
    one (so that the list is compared across the peers it links), else nothing."""
    if folder is None or not (Path(folder) / IDS_FILE).exists():
        return NoData({})
    return NoData(read_id_list(folder, party).agreement())


def _refuse_duplicates(ids: list[str], where: str) -> None:
    if len(set(ids)) == len(ids):
        return
    counts = Counter(ids)
    dup = [i for i, n in counts.items() if n > 1]
    raise DataError(f"{where}: id {dup[0]!r} appears {counts[dup[0]]} times ({len(dup)} ids "
                    "appear more than once)")


class StepTable:
    """A checked table's rows in step order: row(t) is step t's (0-based)."""

    def __init__(self, table: TableFile, order: np.ndarray | None, rows: int):
        self.table, self.rows = table, rows
        self._held: np.ndarray | None = None
        if order is not None:  # not in the list's order: held in memory, sorted by it
            data = np.concatenate([b.values for b in table.blocks()])
            self._held = data[order]
        self._blocks, self._block = None, None

    def row(self, t: int) -> np.ndarray:
        """The values of step t."""
        if not 0 <= t < self.rows:
            raise DataError(f"{self.table.path}: step {t + 1} asked, the table has {self.rows} rows")
        if self._held is not None:
            return self._held[t]
        if self._block is None or t < self._block.first:
            self._blocks, self._block = self.table.blocks(), None
        while self._block is None or t >= self._block.first + len(self._block.values):
            self._block = next(self._blocks)
        return self._block.values[t - self._block.first]


def load_steps(folder: Path, stem: str, party: str, *, columns: tuple[int, ...], what: str,
               steps: int, ids: IdList | None = None, kind: str = "real",
               check: Callable[[Block, TableFile], None] | None = None) -> StepTable:
    """The table folder/stem.* of a party, checked in one pass before the first step: its column
    count (one of `columns`, described by `what`), every cell, `check` on every block (bounds),
    and its ids: aligned to the id list, or unique and at least `steps` rows without one."""
    table = TableFile(find_table(party_folder(folder, party), stem, party), kind)
    if table.columns not in columns:
        raise DataError(f"{party}: {table.path} has {table.columns} value columns, expected "
                        f"{' or '.join(map(str, columns))} ({what})")
    seen: list[str] = []
    rows = 0
    for block in table.blocks():
        if check is not None:
            check(block, table)
        if block.ids is not None:
            seen.extend(block.ids)
        rows += len(block.values)
    where = f"{party}: {table.path}"
    if ids is None:
        _refuse_duplicates(seen, where)
        if rows < steps:
            raise DataError(f"{where}: {rows} rows, the run takes {steps} steps (one row a step)")
        return StepTable(table, None, rows)
    if ids.rows < steps:
        raise DataError(f"{party}: {ids.path}: {ids.rows} ids, the run takes {steps} steps")
    if not table.has_ids:  # .npy: its rows are the list's rows
        if rows != ids.rows:
            raise DataError(f"{where}: {rows} rows, the id list {ids.path} {ids.rows} (an .npy "
                            "table has no ids: its row r is the list's row r)")
        return StepTable(table, None, rows)
    if seen == ids.ids:
        return StepTable(table, None, rows)
    return StepTable(table, _order(seen, ids, where), ids.rows)


def _order(seen: list[str], ids: IdList, where: str) -> np.ndarray:
    """Row of the table holding each listed id, or a DataError: duplicates, ids outside the
    list, ids missing (each with the first such id and how many)."""
    _refuse_duplicates(seen, where)
    position = {i: r for r, i in enumerate(seen)}
    listed = set(ids.ids)
    outside = [i for i in seen if i not in listed]
    if outside:
        raise DataError(f"{where}: {len(outside)} ids are not in the id list {ids.path}, the "
                        f"first {outside[0]!r}")
    missing = [(t, i) for t, i in enumerate(ids.ids) if i not in position]
    if missing:
        t, i = missing[0]
        raise DataError(f"{where}: {len(missing)} ids of the id list {ids.path} are missing, the "
                        f"first {i!r} (step {t + 1})")
    return np.array([position[i] for i in ids.ids], dtype=np.int64)
