"""The partial baseline runs on any set of columns: the leading ones (synthetic, Fig. 6a/b) or a
random subset of whole user features (Criteo, Fig. 6c, App. D.3's random partitions)."""

from pathlib import Path

import numpy as np

from mpcbandit.config import load_config
from mpcbandit.experiments.o3m import random_user_columns
from mpcbandit.protocols.o3m.protocol import plaintext_run

ROOT = Path(__file__).resolve().parents[1]


def _cfg():
    return load_config(ROOT / "configs" / "o3m-synthetic.toml", ["o3m.iterations=60"])


def test_listed_leading_columns_equal_a_column_count():
    cfg = _cfg()
    assert plaintext_run(cfg, list(range(20))) == plaintext_run(cfg, 20)


def test_other_columns_give_another_run():
    cfg = _cfg()
    assert plaintext_run(cfg, list(range(20, 40)))["series"]["arms"] != plaintext_run(cfg, 20)["series"]["arms"]


def test_random_partitions_take_whole_user_features():
    pick = random_user_columns
    rng = np.random.default_rng(0)
    draws = [pick(rng, 0.2) for _ in range(5)]
    for cols in draws:
        assert len(cols) == 3 * 3 and len(set(cols)) == len(cols)  # round(0.2 x 13) = 3 users
        users = {c // 3 for c in cols}
        assert sorted(cols) == [3 * u + i for u in sorted(users) for i in range(3)]
    assert len({tuple(c) for c in draws}) > 1  # the partitions differ
