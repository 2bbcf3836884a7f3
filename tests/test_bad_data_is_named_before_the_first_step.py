"""A party's bad data is a DataError naming the file, the row and the column (or the norm, the
reward, the arm), raised when its source is built: before the hello, so before the first step.
NaN, infinity, a cell that is not a number, a missing cell, a wrong column count, a norm or a
reward outside its bound, an unreadable or missing table, in every format."""

import numpy as np
import pytest

from datafolders import edit, source
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.errors import DataError
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

HANNUN = ("configs/hannun-synthetic.toml", ["hannun.iterations=12", 'hannun.exploration="seeded"'])
CONFIGS = {
    "hannun": HANNUN,
    "jdp": ("configs/jdp-synthetic.toml", ["jdp.horizon=10", "jdp.seeded_noise=true"]),
    "samba": ("configs/samba-synthetic.toml", [
        "samba.paillier_bits=512", "samba.insecure_small_keys=true", "samba.budget=60",
        "samba.arms=3", "samba.fresh_seeds=false"]),
    "o3m-criteo": ("configs/o3m-criteo.toml", ["o3m.iterations=12"]),
    "demo": ("configs/demo-sum.toml", ["demo.iterations=2", "demo.length=4"]),
}


def split(tmp_path, name, *extra, suffix=".csv"):
    path, sets = CONFIGS[name]
    cfg = load_config(path, ['run.security="none"', *sets, *extra])
    write_split(cfg, tmp_path / "data", suffix)
    return cfg, tmp_path / "data"


def set_cell(row, column, value):
    def change(rows):
        rows[row][rows[0].index(column)] = value
    return change


@pytest.mark.parametrize("value, says", [("nan", "nan"), ("-inf", "-inf"),
                                         ("0.2x", "'0.2x' is not a number"),
                                         ("", "'' is not a number")])
def test_a_cell_that_is_not_a_finite_number_is_named_by_file_row_and_column(tmp_path, value, says):
    cfg, data = split(tmp_path, "hannun")
    table = data / "feature_holder.1" / "features.csv"
    edit(table, set_cell(3, "x14", value))
    with pytest.raises(DataError) as e:
        source(cfg, data, "feature_holder.1")
    assert f"{table}: row 3, column 'x14': " in str(e.value) and says in str(e.value)


def test_a_row_with_a_cell_missing_is_named(tmp_path):
    cfg, data = split(tmp_path, "hannun")
    table = data / "feature_holder.0" / "features.csv"
    edit(table, lambda rows: rows[5].pop())
    with pytest.raises(DataError, match=rf"{table}: row 5 has 10 cells, the header 11"):
        source(cfg, data, "feature_holder.0")


def test_a_table_with_the_wrong_number_of_columns_is_named_with_what_was_expected(tmp_path):
    cfg, data = split(tmp_path, "hannun")
    table = data / "feature_holder.0" / "features.csv"
    edit(table, lambda rows: [r.pop() for r in rows])
    with pytest.raises(DataError, match=rf"feature_holder.0: {table} has 9 value columns, "
                                        r"expected 10 \(its 10 of the hannun.dims = 20"):
        source(cfg, data, "feature_holder.0")


def test_a_feature_row_above_unit_norm_is_refused_with_its_norm(tmp_path):
    # the default rule scales a folder's rows; 'promise' is the rule that refuses a row above 1
    cfg, data = split(tmp_path, "hannun", 'hannun.norms="promise"')
    table = data / "feature_holder.0" / "features.csv"
    edit(table, set_cell(2, "x3", "3.0"))
    with pytest.raises(DataError, match=rf"feature_holder.0: {table}: row 2 \(id 'u2'\) has "
                                        r"norm 3\.\d+ > 1: Hannun's contexts have norm <= 1"):
        source(cfg, data, "feature_holder.0")


def test_the_scale_rule_brings_every_holders_slice_within_its_share_of_unit_norm(tmp_path):
    cfg, data = split(tmp_path, "hannun", 'hannun.norms="scale"')
    for holder in ("feature_holder.0", "feature_holder.1"):  # each organisation's own scale
        edit(data / holder / "features.csv",
             lambda rows: [r.__setitem__(c, repr(3 * float(r[c]))) for r in rows[1:]
                           for c in range(1, len(r))])
    for i in range(2):
        own = source(cfg, data, f"feature_holder.{i}")
        norms = [np.linalg.norm(own.features(t)) for t in range(12)]
        assert max(norms) == pytest.approx(1 / np.sqrt(2))  # whole contexts: <= 1
    run_protocol_inproc(cfg, data_dir=data)  # the engine's range holds: the run completes


@pytest.mark.parametrize("name, party, table, row, column, value, says", [
    ("hannun", "environment.0", "rewards.csv", 4, "reward_3", "2", "reward 2.0: Hannun's rewards are 0 or 1"),
    ("jdp", "env.0", "rounds.csv", 2, "reward_1", "1.5", "1.5 is outside [-1, 1], the privacy proof's bound B = 1"),
    ("jdp", "env.0", "rounds.csv", 6, "a2_x0", "2.0", "action 2 (columns 'a2_x0'..): norm"),
    ("o3m-criteo", "env.0", "log.csv", 3, "arm", "40", "40.0 is not an arm (an integer in 0..39)"),
    ("samba", "do.1", "mean.csv", 1, "mean", "1.25", "1.25 is not a mean in [0, 1]"),
])
def test_a_value_outside_its_bound_is_named(tmp_path, name, party, table, row, column, value, says):
    if name == "o3m-criteo":
        from mpcbandit.data.criteo import default_path
        if not default_path().exists():
            pytest.skip("needs the Criteo sample")
    cfg, data = split(tmp_path, name)
    edit(data / party / table, set_cell(row, column, value))
    with pytest.raises(DataError) as e:
        source(cfg, data, party)
    where = f"{data / party / table}: row {row}"
    assert where in str(e.value) and says in str(e.value)


def test_recorded_outcomes_that_are_not_0_or_1_are_named(tmp_path):
    cfg, data = split(tmp_path, "samba")
    (data / "do.0" / "mean.csv").unlink()
    (data / "do.0" / "outcomes.csv").write_text("id,reward\np1,1\np2,0.5\n")
    with pytest.raises(DataError, match=r"outcomes.csv: row 2, column 'reward': 0.5 is not a reward, 0 or 1"):
        source(cfg, data, "do.0")


def test_recorded_outcomes_that_run_out_stop_the_run_naming_the_owner(tmp_path):
    cfg, data = split(tmp_path, "samba")
    (data / "do.0" / "mean.csv").unlink()
    (data / "do.0" / "outcomes.csv").write_text("id,reward\np1,1\np2,1\n")
    with pytest.raises(DataError, match=r"do.0: .*outcomes.csv holds 2 outcomes; the run pulls "
                                        r"this arm a 3th time"):
        run_protocol_inproc(cfg, data_dir=data)


def test_demo_inputs_outside_64_bits_are_named(tmp_path):
    cfg, data = split(tmp_path, "demo")
    table = data / "input.2" / "inputs.csv"
    edit(table, set_cell(1, "v3", str(2**64)))
    with pytest.raises(DataError, match=rf"{table}: row 1, column 'v3': '18446744073709551616' "
                                        r"is not an integer in \[0, 2\^64\)"):
        source(cfg, data, "input.2")


def test_a_table_that_cannot_be_read_is_named(tmp_path):
    cfg, data = split(tmp_path, "hannun")
    table = data / "feature_holder.0" / "features.csv"
    table.write_bytes(b"id,x0\n\xff\xfe garbage\n")
    with pytest.raises(DataError, match=rf"{table}: not UTF-8 text \(byte b'\\xff'"):
        source(cfg, data, "feature_holder.0")
    table.unlink()
    table.mkdir()  # a folder where the table belongs
    with pytest.raises(DataError, match=rf"{table}: cannot read it: a folder"):
        source(cfg, data, "feature_holder.0")


def test_a_missing_table_or_folder_is_named(tmp_path):
    cfg, data = split(tmp_path, "hannun")
    (data / "environment.0" / "rewards.csv").unlink()
    with pytest.raises(DataError, match=r"environment.0: .* holds none of rewards.csv, rewards.npy, "
                                        r"rewards.parquet"):
        source(cfg, data, "environment.0")
    with pytest.raises(DataError, match=r"feature_holder.1: its data folder .*nowhere does not exist"):
        get_protocol("hannun").source(cfg, "feature_holder", 1, tmp_path / "nowhere")


def test_an_npy_table_of_the_wrong_shape_or_with_a_nan_is_named(tmp_path):
    cfg, data = split(tmp_path, "hannun", suffix=".npy")
    table = data / "feature_holder.0" / "features.npy"
    x = np.load(table)
    x[7, 2] = np.nan
    np.save(table, x)
    with pytest.raises(DataError, match=rf"{table}: row 8, column 'column 3': nan"):
        source(cfg, data, "feature_holder.0")
    np.save(table, x[:, :, None])
    with pytest.raises(DataError, match=rf"{table}: a table is a 2-D numeric array, this one is 3-D"):
        source(cfg, data, "feature_holder.0")


def test_a_parquet_null_is_named(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    cfg, data = split(tmp_path, "hannun", suffix=".parquet")
    table = data / "feature_holder.0" / "features.parquet"
    t = pq.read_table(table)
    col = t.column("x4").to_pylist()
    col[5] = None
    pq.write_table(t.set_column(t.schema.get_field_index("x4"), "x4", pa.array(col)), table)
    with pytest.raises(DataError, match=rf"{table}: row 6, column 'x4': empty \(null\)"):
        source(cfg, data, "feature_holder.0")
