"""A party's numeric tables, read and written in blocks of rows (bounded memory at any size).

Formats, by the file's suffix:
- ``.csv``: a header row naming the columns, one of them ``id``; every other cell a number.
- ``.npy``: a 2-D numeric array, no ids (its row r is the id list's row r).
- ``.parquet`` (needs ``pyarrow``: ``pip install -e ".[parquet]"``): an ``id`` column and numeric
  columns, read one batch of a row group at a time.
Every cell is checked as it is read: a cell that is not a number, NaN or infinite, or a row with
too few or too many cells is a DataError naming the file, the row (1 = the first row of data)
and the column. ``kind = "uint64"`` reads integers in [0, 2^64) exactly (the demo's inputs).
An .npy array's dtype and a Parquet column's type must fit the kind (one rule, ``TableFile.fits``: no
bools, no floats for integers), and an id is at most MAX_ID_CHARS characters in any format. A
Parquet file's metadata is checked before a row is read: no column chunk may unpack to more
than its rows could hold with every cell within those bounds (parquet_tables.py).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpcbandit.data import ID, check_file, open_data_file
from mpcbandit.data.parquet_tables import parquet_checked, parquet_module, parquet_rows
from mpcbandit.data.stray import note_read
from mpcbandit.errors import DataError
# a table's id is what a request names when a service looks its row up: one bound for both
from mpcbandit.serve.requests import MAX_ID_CHARS

__all__ = ["SUFFIXES", "BLOCK_ROWS", "MAX_ID_CHARS", "ID", "Block", "TableFile", "TableWriter",
           "check_ids", "find_table", "present"]

SUFFIXES = (".csv", ".npy", ".parquet")
BLOCK_ROWS = 4096          # rows read or written at once
_DTYPES = {"real": np.float64, "uint64": np.uint64}
#: what a cell of each kind must be, and the numpy dtype kinds that hold only such values: a
#: bool is not a number (a CSV refuses 'True'), a float not an integer (a CSV refuses '2.0')
_WANT = {"real": "a number", "uint64": "an integer in [0, 2^64)"}
_KINDS = {"real": "iuf", "uint64": "iu"}


def present(folder: Path, stem: str) -> bool:
    """Whether folder holds a table stem.* in any format."""
    note_read(folder, stem)
    return any(os.path.lexists(Path(folder) / f"{stem}{suffix}") for suffix in SUFFIXES)


def find_table(folder: Path, stem: str, party: str) -> Path:
    """The one file folder/stem.{csv,npy,parquet}; a DataError naming the folder otherwise."""
    note_read(folder, stem)
    found = [folder / f"{stem}{suffix}" for suffix in SUFFIXES if os.path.lexists(folder / f"{stem}{suffix}")]
    if len(found) != 1:
        what = "none of" if not found else "more than one of"
        raise DataError(f"{party}: {folder} holds {what} {', '.join(stem + s for s in SUFFIXES)} "
                        "(exactly one is read: docs/data.md)")
    return found[0]


def check_ids(ids: list[str], path: Path, first: int) -> None:
    """A DataError naming the file and row of the first of ids (rows first+1, ...) that is longer
    than MAX_ID_CHARS."""
    if max(map(len, ids), default=0) <= MAX_ID_CHARS:
        return
    r = next(r for r, i in enumerate(ids) if len(i) > MAX_ID_CHARS)
    raise DataError(f"{path}: row {first + r + 1}, column '{ID}': an id of {len(ids[r])} "
                    f"characters, more than {MAX_ID_CHARS} (the longest id a request may carry)")


def _not_utf8(path: Path, e: UnicodeDecodeError) -> DataError:
    """A table that is not UTF-8 text (read ahead in chunks: its row is not known)."""
    return DataError(f"{path}: not UTF-8 text (byte {e.object[e.start:e.start + 1]!r}: a CSV "
                     "table is UTF-8; is it another format or encoding?)")


@dataclass(frozen=True)
class Block:
    """Rows first .. first + len(values) - 1 (0-based) of a table: their ids and values."""

    first: int
    ids: list[str] | None
    values: np.ndarray


class TableFile:
    """One numeric table: its value columns' names, whether it has ids, and its rows in blocks."""

    def __init__(self, path: Path, kind: str = "real"):
        self.path, self.kind, self.dtype = Path(path), kind, _DTYPES[kind]
        self.suffix = self.path.suffix.lower()
        if self.suffix not in SUFFIXES:
            raise DataError(f"{path}: not a table ({', '.join(SUFFIXES)})")
        check_file(self.path)
        self.names: list[str] = self._names()
        self.has_ids = self.suffix != ".npy"

    @property
    def columns(self) -> int:
        """How many value columns (the id column not counted)."""
        return len(self.names)

    def _names(self) -> list[str]:
        if self.suffix == ".csv":
            with open_data_file(self.path, text=True) as f:
                header = self._csv_header(csv.reader(f))
            return [n for n in header if n != ID]
        if self.suffix == ".npy":
            return [f"column {c + 1}" for c in range(self._npy().shape[1])]
        names = parquet_checked(self).schema_arrow.names
        return [n for n in names if n != ID]

    def id_column(self, names: list[str]) -> int:
        """Where the one id column is, in a CSV header or a Parquet schema."""
        if names.count(ID) != 1:
            raise DataError(f"{self.path}: the columns must name one '{ID}' column, they read "
                            f"{','.join(names[:6])}{'...' if len(names) > 6 else ''}")
        return names.index(ID)

    def fits(self, dtype: np.dtype | None, shown: str, where: str = "") -> None:
        """A DataError naming the file (and `where`, a column) unless values of dtype can be this
        table's cells: the one type rule of .npy arrays and Parquet columns."""
        if dtype is None or dtype.kind not in _KINDS[self.kind]:
            raise DataError(f"{self.path}: {where}holds {shown}: each cell must be "
                            f"{_WANT[self.kind]}")

    def as_kind(self, values: np.ndarray, first: int, column: int = 0) -> np.ndarray:
        """values (rows first+1.., columns from `column`) as this table's dtype; integers in
        [0, 2^64) refuse a negative, naming its row and column (numpy would wrap it)."""
        if self.kind == "uint64" and values.dtype.kind == "i" and (values < 0).any():
            r, c = np.argwhere(values < 0)[0]
            raise DataError(f"{self.path}: row {first + r + 1}, column '{self.names[column + c]}': "
                            f"{values[r, c]} is not {_WANT[self.kind]}")
        return values.astype(self.dtype)

    def _csv_header(self, reader) -> list[str]:
        try:
            header = [h.strip() for h in next(reader)]
        except StopIteration:
            raise DataError(f"{self.path}: empty (a CSV table starts with a header row)") from None
        except UnicodeDecodeError as e:
            raise _not_utf8(self.path, e) from None
        except csv.Error as e:
            raise DataError(f"{self.path}: row 0 (the header): not CSV text ({e})") from None
        self.id_column(header)
        return header

    def _npy(self) -> np.ndarray:
        try:
            arr = np.load(self.path, mmap_mode="r", allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise DataError(f"{self.path}: not a readable .npy array ({e})") from None
        if arr.ndim == 1:
            arr = arr.reshape(-1, 1)
        if arr.ndim != 2:
            raise DataError(f"{self.path}: a table is a 2-D numeric array, this one is "
                            f"{arr.ndim}-D of {arr.dtype}")
        self.fits(arr.dtype, str(arr.dtype))
        return arr

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[Block]:
        """The table's rows in order, `rows` at a time, every cell checked."""
        read = {".csv": self._csv_blocks, ".npy": self._npy_blocks,
                ".parquet": lambda rows: parquet_rows(self, rows)}[self.suffix]
        first = 0
        for ids, values in read(rows):
            if ids is not None:
                check_ids(ids, self.path, first)
            self._check_finite(values, first)
            yield Block(first, ids, values)
            first += len(values)

    def _csv_blocks(self, rows: int):
        with open_data_file(self.path, text=True) as f:
            reader = csv.reader(f)
            header = self._csv_header(reader)
            at = header.index(ID)
            ids: list[str] = []
            cells: list[list[str]] = []
            row = 0
            try:
                for line in reader:
                    row += 1
                    if len(line) != len(header):
                        raise DataError(f"{self.path}: row {row} has {len(line)} cells, the "
                                        f"header {len(header)}")
                    ids.append(line[at])
                    cells.append(line[:at] + line[at + 1:])
                    if len(cells) == rows:
                        yield ids, self._numbers(cells, row - len(cells) + 1)
                        ids, cells = [], []
            except UnicodeDecodeError as e:
                raise _not_utf8(self.path, e) from None
            except csv.Error as e:
                raise DataError(f"{self.path}: row {row + 1}: not CSV text ({e})") from None
            if cells:
                yield ids, self._numbers(cells, row - len(cells) + 1)

    def _numbers(self, cells: list[list[str]], first_row: int) -> np.ndarray:
        """cells as numbers; a DataError naming the first cell that is not one."""
        try:
            if self.kind == "real":
                return np.array(cells, dtype=np.float64).reshape(len(cells), self.columns)
            return np.array([[int(c) for c in line] for line in cells],
                            dtype=np.uint64).reshape(len(cells), self.columns)
        except (ValueError, OverflowError):
            pass
        for r, line in enumerate(cells):
            for c, cell in enumerate(line):
                try:
                    float(cell) if self.kind == "real" else np.uint64(int(cell))
                except (ValueError, OverflowError):
                    want = "a number" if self.kind == "real" else "an integer in [0, 2^64)"
                    raise DataError(f"{self.path}: row {first_row + r}, column '{self.names[c]}': "
                                    f"{cell[:40]!r} is not {want}") from None
        raise DataError(f"{self.path}: rows {first_row}..{first_row + len(cells) - 1}: not numbers")

    def _npy_blocks(self, rows: int):
        arr = self._npy()
        for start in range(0, arr.shape[0], rows):
            yield None, self.as_kind(np.asarray(arr[start:start + rows]), start)

    def _check_finite(self, values: np.ndarray, first: int) -> None:
        if self.kind != "real":
            return
        bad = np.argwhere(~np.isfinite(values))
        if len(bad):
            r, c = bad[0]
            raise DataError(f"{self.path}: row {first + r + 1}, column '{self.names[c]}': "
                            f"{float(values[r, c])!r} ({len(bad)} cells NaN or infinite)")


class TableWriter:
    """Writes a table block by block (mode 0600): CSV with floats that read back exactly, .npy
    (rows known in advance) or .parquet (one row group a block)."""

    def __init__(self, path: Path, names: list[str], rows: int, kind: str = "real"):
        self.path, self.names, self.rows, self.kind = Path(path), list(names), rows, kind
        self.suffix, self.written = self.path.suffix.lower(), 0
        self.dtype = _DTYPES[kind]
        if self.suffix not in (".csv", ".npy"):
            pq = parquet_module()   # a DataError naming the extra, before a file is made
            self._pa = pa = __import__("pyarrow")
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        if self.suffix == ".csv":
            self._f = os.fdopen(fd, "w", newline="", encoding="utf-8")
            self._csv = csv.writer(self._f, lineterminator="\n")
            self._csv.writerow([ID, *self.names])
        elif self.suffix == ".npy":
            os.close(fd)
            self._arr = np.lib.format.open_memmap(self.path, mode="w+", dtype=self.dtype,
                                                  shape=(rows, len(self.names)))
        else:
            os.close(fd)
            self._schema = pa.schema([(ID, pa.string())] + [
                (n, pa.float64() if kind == "real" else pa.uint64()) for n in self.names])
            self._pq = pq.ParquetWriter(self.path, self._schema)

    def add(self, ids: list[str], values: np.ndarray) -> None:
        """Append rows (their ids and a len(ids) x columns array)."""
        values = np.asarray(values, dtype=self.dtype).reshape(len(ids), len(self.names))
        if self.suffix == ".csv":
            fmt = repr if self.kind == "real" else str
            self._csv.writerows([i, *map(fmt, row.tolist())] for i, row in zip(ids, values))
        elif self.suffix == ".npy":
            self._arr[self.written:self.written + len(ids)] = values
        else:
            pa = self._pa
            cols = [pa.array(ids, pa.string())] + [pa.array(values[:, c]) for c in range(values.shape[1])]
            self._pq.write_table(pa.Table.from_arrays(cols, schema=self._schema))
        self.written += len(ids)

    def close(self) -> None:
        """Finish the file."""
        if self.suffix == ".csv":
            self._f.close()
        elif self.suffix == ".npy":
            self._arr.flush()
            del self._arr
        else:
            self._pq.close()
