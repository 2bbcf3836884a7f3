"""The public id list orders the steps: a party's table aligned to it may list its rows in any
order; an id missing from it, an id twice, or ids outside the list are a DataError naming the
party, the id and how many, before the first step."""

import random

import pytest

from datafolders import edit, source
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.errors import DataError
from mpcbandit.protocols.inproc_runner import inproc_summary

SETS = ['run.security="none"', "o3m.iterations=30", "o3m.participants=3", "o3m.partition=[4,3,3]"]


@pytest.fixture
def o3m(tmp_path):
    cfg = load_config("configs/o3m-synthetic.toml", SETS)
    write_split(cfg, tmp_path / "data")
    return cfg, tmp_path / "data"


def shuffle(rows):
    body = rows[1:]
    random.Random(7).shuffle(body)
    assert body != rows[1:]
    rows[1:] = body


def test_a_table_in_another_order_is_aligned_by_id(o3m):
    cfg, data = o3m
    for party in ("pp.2", "env.0"):
        table = data / party / ("features.csv" if party == "pp.2" else "rewards.csv")
        edit(table, shuffle)
    assert inproc_summary(cfg, data)["series"]["arms"] == inproc_summary(cfg)["series"]["arms"]


def test_an_id_missing_from_a_table_is_named_with_the_party_and_how_many(o3m):
    cfg, data = o3m
    table = data / "pp.1" / "features.csv"
    edit(table, lambda rows: [rows.remove(r) for r in list(rows) if r[0] in ("u5", "u9")])
    with pytest.raises(DataError, match=rf"pp.1: {table}: 2 ids of the id list .*ids.csv are "
                                        r"missing, the first 'u5' \(step 5\)"):
        source(cfg, data, "pp.1")


def test_an_id_twice_in_a_table_is_named(o3m):
    cfg, data = o3m
    table = data / "ap.0" / "features.csv"
    edit(table, lambda rows: rows.append(rows[3]))
    with pytest.raises(DataError, match=rf"ap.0: {table}: id 'u3' appears 2 times \(1 ids"):
        source(cfg, data, "ap.0")


def test_ids_outside_the_list_are_named(o3m):
    cfg, data = o3m
    table = data / "env.0" / "rewards.csv"
    edit(table, lambda rows: [rows[r].__setitem__(0, i) for r, i in ((4, "stranger"), (8, "another"))])
    with pytest.raises(DataError, match=rf"env.0: {table}: 2 ids are not in the id list "
                                        r".*ids.csv, the first 'stranger'"):
        source(cfg, data, "env.0")


def test_an_id_list_with_a_duplicate_or_too_few_ids_is_named(o3m):
    cfg, data = o3m
    ids = data / "pp.1" / "ids.csv"
    edit(ids, lambda rows: rows.append(rows[1]))
    with pytest.raises(DataError, match=rf"pp.1: {ids}: id 'u1' appears 2 times"):
        source(cfg, data, "pp.1")
    edit(ids, lambda rows: rows.__delitem__(slice(11, None)))
    with pytest.raises(DataError, match=rf"pp.1: {ids}: 10 ids, the run takes 30 steps"):
        source(cfg, data, "pp.1")


def test_an_npy_table_must_have_the_lists_rows(tmp_path):
    cfg = load_config("configs/o3m-synthetic.toml", SETS)
    write_split(cfg, tmp_path / "data", ".npy")
    ids = tmp_path / "data" / "pp.2" / "ids.csv"
    ids.write_text(ids.read_text() + "u31\n")
    with pytest.raises(DataError, match=r"pp.2: .*features.npy: 30 rows, the id list .*ids.csv 31 "
                                        r"\(an .npy table has no ids"):
        source(cfg, tmp_path / "data", "pp.2")


def test_id_lists_that_differ_only_where_an_id_holds_a_newline_hash_apart(tmp_path):
    from mpcbandit.data.folder import read_id_list

    one, two = tmp_path / "one", tmp_path / "two"
    for folder, text in ((one, 'id\n"a\nb"\nc\n'), (two, "id\na\nb\nc\n")):
        folder.mkdir()
        (folder / "ids.csv").write_text(text)
    first, second = read_id_list(one, "pp.0"), read_id_list(two, "pp.0")
    assert first.ids == ["a\nb", "c"] and second.ids == ["a", "b", "c"]
    assert first.digest != second.digest
