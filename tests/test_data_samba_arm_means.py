"""SAMBA arm files and the means built from raw MovieLens and Jester ratings (§6.1)."""

from __future__ import annotations

import numpy as np
import pytest

from mpcbandit.data import data_root, resolve_data_path
from mpcbandit.data.samba import (jester_means, movielens_means, read_arm_file, top_means,
                                  write_arm_file)
from mpcbandit.errors import ConfigError


def test_arm_file_round_trip_and_top_k(tmp_path):
    path = tmp_path / "arms.txt"
    write_arm_file(path, [0.1, 0.7, 0.3])
    means = read_arm_file(path)
    assert means.tolist() == [0.1, 0.7, 0.3]
    assert top_means(means, 2).tolist() == [0.7, 0.3]
    with pytest.raises(ValueError, match="only 3"):
        top_means(means, 4)
    path.write_text("3\n0.1\n0.2\n")
    with pytest.raises(ValueError, match="header says 3"):
        read_arm_file(path)


def test_movielens_u_data_and_ratings_csv_give_the_same_means(tmp_path):
    rows = [(1, 10, 5), (2, 10, 3), (3, 10, 4), (1, 20, 2), (2, 20, 4)]
    (tmp_path / "u.data").write_text("".join(f"{u}\t{i}\t{r}\t0\n" for u, i, r in rows))
    (tmp_path / "ratings.csv").write_text("userId,movieId,rating,timestamp\n"
                                          + "".join(f"{u},{i},{r}.0,0\n" for u, i, r in rows))
    a = movielens_means(tmp_path / "u.data")
    b = movielens_means(tmp_path / "ratings.csv")
    assert a == b == {10: 2 / 3, 20: 1 / 2}
    assert movielens_means(tmp_path / "u.data", denominator="users") == {10: 2 / 3, 20: 1 / 3}


def test_jester_means_skip_missing_ratings(tmp_path):
    path = tmp_path / "jester.csv"
    path.write_text("3,5.0,99,-2.0\n2,99,8.5,4.6\n3,4.5,1.0,99\n")
    assert jester_means(path) == {1: 2 / 2, 2: 1 / 2, 3: 1 / 2}
    assert jester_means(path, denominator="users") == {1: 2 / 3, 2: 1 / 3, 3: 1 / 3}


def test_missing_data_file_names_the_key_and_the_env(tmp_path, monkeypatch):
    monkeypatch.setenv("MPCBANDIT_DATA", str(tmp_path))
    with pytest.raises(ConfigError, match="MPCBANDIT_DATA") as err:
        resolve_data_path("samba/data/Nope.txt", "samba.data")
    assert err.value.key == "samba.data"


@pytest.mark.skipif(not (data_root() / "samba" / "data" / "MovieLens.txt").is_file(),
                    reason="shared SAMBA data not present")
def test_shipped_arm_files_have_100_arms_in_range():
    for name in ("MovieLens.txt", "JesterLarge.txt"):
        means = read_arm_file(data_root() / "samba" / "data" / name)
        assert len(means) == 100 and np.all((means >= 0) & (means <= 1))
