"""Parquet tables, read as the CSV and .npy ones are (mpcbandit/data/tables.py): every column's
type checked by the table's one type rule, and the file's metadata checked before a row is read
(a small file may hold a huge cell), then its rows in batches of a row group."""

from __future__ import annotations

import numpy as np

from mpcbandit.data import ID
from mpcbandit.errors import DataError
# a table's id is what a request names when a service looks its row up: one bound for both
from mpcbandit.serve.requests import MAX_ID_CHARS

__all__ = ["parquet_checked", "parquet_rows", "parquet_module"]

#: the most bytes a Parquet cell may take unpacked, as a column chunk's metadata counts them: a
#: number's 8 and an id's 4 x MAX_ID_CHARS (UTF-8), each with room for its length, a
#: dictionary index and levels; and a chunk's own (page headers, statistics)
_NUMBER_BYTES = 16
_ID_BYTES = 4 * MAX_ID_CHARS + 16
_CHUNK_BYTES = 1 << 20


def parquet_module():
    """pyarrow.parquet, or a DataError saying how to install it."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("reading or writing .parquet needs pyarrow: pip install -e \".[parquet]\"") from None
    return pq


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _numpy_dtype(arrow_type) -> np.dtype | None:
    """The numpy dtype an Arrow type's values convert to; None for a type with none (nested)."""
    try:
        return np.dtype(arrow_type.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        return None


def _parquet_file(table: TableFile):
    try:
        return parquet_module().ParquetFile(table.path)
    except DataError:
        raise
    except Exception as e:  # noqa: BLE001 - pyarrow raises its own errors for a bad file
        raise DataError(f"{table.path}: not a readable Parquet file ({type(e).__name__}: {e})") from None


def parquet_checked(table: TableFile):
    """The Parquet file, its column types and unpacked sizes checked from its metadata: a
    small file may hold a huge cell, so nothing is read before they are."""
    import pyarrow as pa

    pf = _parquet_file(table)
    schema = pf.schema_arrow
    at = table.id_column(schema.names)
    for c, field in enumerate(schema):
        if c != at:
            table.fits(_numpy_dtype(field.type), str(field.type), f"column '{field.name}' ")
        elif not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)
                  or pa.types.is_integer(field.type)):
            raise DataError(f"{table.path}: column '{ID}' holds {field.type}: an id is text "
                            "or an integer")
    meta = pf.metadata
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            cell = _ID_BYTES if chunk.path_in_schema == ID else _NUMBER_BYTES
            most = group.num_rows * cell + _CHUNK_BYTES
            if chunk.total_uncompressed_size > most:
                raise DataError(
                    f"{table.path}: row group {g + 1} ({group.num_rows} rows), column "
                    f"'{chunk.path_in_schema}' unpacks to {_mib(chunk.total_uncompressed_size)}, "
                    f"more than {group.num_rows} rows may hold ({_mib(most)}: ids of at most "
                    f"{MAX_ID_CHARS} characters, numbers of 8 bytes); refused before reading it")
    return pf


def parquet_rows(table: TableFile, rows: int):
    """(ids, values) of the table's rows, `rows` at a time, each cell of the table's kind."""
    pf = parquet_checked(table)
    names = pf.schema_arrow.names
    at = names.index(ID)
    batches = pf.iter_batches(batch_size=rows)
    first = 0
    while True:
        try:
            batch = next(batches, None)
        except Exception as e:  # noqa: BLE001 - pyarrow raises its own errors for a bad page
            raise DataError(f"{table.path}: rows from {first + 1}: not readable Parquet "
                            f"({type(e).__name__}: {e})") from None
        if batch is None:
            return
        for c, col in enumerate(batch.columns):
            if col.null_count:
                r = col.is_null().to_pylist().index(True)
                raise DataError(f"{table.path}: row {first + r + 1}, column '{names[c]}': "
                                "empty (null)")
        ids = [str(v) for v in batch.column(at).to_pylist()]
        # column by column: stacking int64 with uint64 columns would pass through float64
        cols = [table.as_kind(batch.column(c).to_numpy(zero_copy_only=False).reshape(-1, 1),
                              first, k)
                for k, c in enumerate(c for c in range(len(names)) if c != at)]
        first += len(ids)
        yield ids, np.hstack(cols) if cols else np.zeros((len(ids), 0), table.dtype)
