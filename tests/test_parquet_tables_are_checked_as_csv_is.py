"""A Parquet table is checked as a CSV or .npy table is: a column's Arrow type must fit what it
holds (integers in [0, 2^64) refuse floats, bools and negatives; numbers refuse bools and
text), an id is at most MAX_ID_CHARS characters, and the same DataError names the file, the row
and the column. Its metadata is read first: a file whose column chunks unpack to more than their
rows could hold (a small file holding one huge id) is refused, naming it, before a row is read.
Before: floats were truncated, negatives wrapped, bools read as 1, and an 18 KB file holding
one 400 MB id took a holder to 3.5 GB."""

import pytest

from datafolders import edit, source
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.data.tables import TableFile
from mpcbandit.errors import DataError
from mpcbandit.serve.requests import MAX_ID_CHARS

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

DEMO = ("configs/demo-sum.toml", ["demo.iterations=3", "demo.length=4"])
HANNUN = ("configs/hannun-synthetic.toml", ["hannun.iterations=12", 'hannun.exploration="seeded"'])


def split(tmp_path, case, suffix=".parquet"):
    path, sets = case
    cfg = load_config(path, ['run.security="none"', *sets])
    write_split(cfg, tmp_path / suffix, suffix)
    return cfg, tmp_path / suffix


def set_column(path, name, values, type=None):
    t = pq.read_table(path)
    at = t.schema.get_field_index(name)
    pq.write_table(t.set_column(at, name, pa.array(values, type)), path)


@pytest.mark.parametrize("values, type, says", [
    ([7.0, 1.5, 3.0], pa.float64(), r"column 'v3' holds double: each cell must be an integer in \[0, 2\^64\)"),
    ([7.0, 2.0, 3.0], pa.float64(), r"column 'v3' holds double"),  # as "2.0" in a CSV, a float .npy
    ([True, False, True], pa.bool_(), r"column 'v3' holds bool: each cell must be an integer"),
    ([7, -1, 3], pa.int64(), r"row 2, column 'v3': -1 is not an integer in \[0, 2\^64\)"),
])
def test_an_integer_column_refuses_floats_bools_and_negatives(tmp_path, values, type, says):
    cfg, data = split(tmp_path, DEMO)
    table = data / "input.1" / "inputs.parquet"
    set_column(table, "v3", values, type)
    with pytest.raises(DataError, match=rf"{table}: {says}"):
        source(cfg, data, "input.1")


def test_an_integer_column_of_any_integer_type_reads_exactly(tmp_path):
    cfg, data = split(tmp_path, DEMO)
    table = data / "input.0" / "inputs.parquet"
    set_column(table, "v0", [0, 2**63 - 1, 5], pa.int64())
    set_column(table, "v1", [2**64 - 1, 1, 2], pa.uint64())
    set_column(table, "v2", [255, 0, 1], pa.uint8())
    own = source(cfg, data, "input.0")
    assert [int(own.inputs(t)[0]) for t in range(3)] == [0, 2**63 - 1, 5]
    assert [int(own.inputs(t)[1]) for t in range(3)] == [2**64 - 1, 1, 2]
    assert [int(own.inputs(t)[2]) for t in range(3)] == [255, 0, 1]


@pytest.mark.parametrize("type, cell, says", [
    (pa.bool_(), True, "holds bool: each cell must be a number"),   # a CSV refuses 'True'
    (pa.string(), "1", "holds string: each cell must be a number"),
    (pa.timestamp("s"), 0, r"holds timestamp\[\w+\]: each cell must be a number"),
])
def test_a_number_column_refuses_other_types(tmp_path, type, cell, says):
    cfg, data = split(tmp_path, HANNUN)
    table = data / "environment.0" / "rewards.parquet"
    set_column(table, "reward_3", [cell] * 12, type)
    with pytest.raises(DataError, match=rf"{table}: column 'reward_3' {says}"):
        source(cfg, data, "environment.0")


def test_an_integer_reward_outside_its_bound_is_named_as_in_a_csv(tmp_path):
    messages = {}
    for suffix in (".csv", ".parquet"):
        cfg, data = split(tmp_path, HANNUN, suffix)
        table = data / "environment.0" / f"rewards{suffix}"
        if suffix == ".csv":
            edit(table, lambda rows: rows[4].__setitem__(rows[0].index("reward_3"), "-1"))
        else:
            set_column(table, "reward_3", [0] * 3 + [-1] + [1] * 8, pa.int8())
        with pytest.raises(DataError) as e:
            source(cfg, data, "environment.0")
        messages[suffix] = str(e.value).replace(str(table), "TABLE")
    assert messages[".csv"] == messages[".parquet"] == \
        "TABLE: row 4, column 'reward_3': reward -1.0: Hannun's rewards are 0 or 1"


def test_an_id_too_long_is_named_as_in_a_csv(tmp_path):
    messages = {}
    for suffix in (".csv", ".parquet"):
        cfg, data = split(tmp_path, HANNUN, suffix)
        ids = [f"u{t + 1}" for t in range(12)]
        ids[6] = "u" * (MAX_ID_CHARS + 1)
        (data / "feature_holder.0" / "ids.csv").write_text("id\n" + "\n".join(ids) + "\n")
        table = data / "feature_holder.0" / f"features{suffix}"
        if suffix == ".csv":
            edit(table, lambda rows: rows[7].__setitem__(0, ids[6]))
        else:
            set_column(table, "id", ids)
        with pytest.raises(DataError) as e:
            TableFile(table).blocks().__next__()
        messages[suffix] = str(e.value).replace(str(table), "TABLE")
    assert messages[".csv"] == messages[".parquet"] == (
        f"TABLE: row 7, column 'id': an id of {MAX_ID_CHARS + 1} characters, more than "
        f"{MAX_ID_CHARS} (the longest id a request may carry)")
    with pytest.raises(DataError, match=rf"ids.csv: row 7, column 'id': an id of {MAX_ID_CHARS + 1}"):
        source(cfg, data, "feature_holder.0")   # the id list itself holds it


def test_a_null_id_or_an_id_column_that_is_not_text_is_named(tmp_path):
    cfg, data = split(tmp_path, HANNUN)
    table = data / "feature_holder.1" / "features.parquet"
    set_column(table, "id", [f"u{t + 1}" if t != 4 else None for t in range(12)])
    with pytest.raises(DataError, match=rf"{table}: row 5, column 'id': empty \(null\)"):
        source(cfg, data, "feature_holder.1")
    set_column(table, "id", [float(t) for t in range(12)], pa.float64())
    with pytest.raises(DataError, match=rf"{table}: column 'id' holds double: an id is text or "
                                        "an integer"):
        source(cfg, data, "feature_holder.1")


def test_a_file_that_unpacks_past_what_its_rows_may_hold_is_refused_before_a_row_is_read(tmp_path):
    table = tmp_path / "outcomes.parquet"
    huge = "a" * (20 << 20)   # the red team's 400 MB id, smaller: the bound is per row
    pq.write_table(pa.table({"id": [huge], "reward": [1.0]}), table, compression="zstd")
    assert table.stat().st_size < 100_000
    with pytest.raises(DataError, match=rf"{table}: row group 1 \(1 rows\), column 'id' unpacks "
                                        r"to 20\.0 MiB, more than 1 rows may hold \(1\.0 MiB: "
                                        rf"ids of at most {MAX_ID_CHARS} characters"):
        TableFile(table)   # opening it: no row is read
