"""The Criteo loader builds App. D.3's stream from the shared Kaggle sample."""

import numpy as np
import pytest

from mpcbandit.config import load_config
from mpcbandit.data.criteo import DIMS, default_path, load_criteo, outer_add
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.o3m.protocol import plaintext_run

pytestmark = pytest.mark.skipif(not default_path().is_file(), reason="shared Criteo sample absent")


def test_sample_loads_into_forty_arms_with_scaled_features():
    log = load_criteo(arms=40)
    n = len(log.clicks)
    assert 1000 < n < 1999  # only rows showing one of the 40 most common item labels
    assert log.users.shape == (n, 13) and log.items.shape == (40, 3)
    assert log.users.min() == 0.0 and log.users.max() == 1.0
    assert log.items.min() == 0.0 and log.items.max() == 1.0
    assert set(np.unique(log.clicks)) == {0, 1}
    assert len(set(log.labels.tolist())) == 40
    counts = np.bincount(log.logged_arm, minlength=40)
    assert np.all(counts[:-1] >= counts[1:])  # arm 0 is the most common label
    x = log.contexts(5)
    assert x.shape == (40, DIMS)
    assert x[3, 2 * 3 + 1] == pytest.approx(log.users[5, 2] + log.items[3, 1])


def test_outer_add_is_user_plus_item_per_pair():
    x = outer_add(np.array([1.0, 2.0]), np.array([[10.0, 20.0, 30.0]]))
    assert x.tolist() == [[11.0, 21.0, 31.0, 12.0, 22.0, 32.0]]


def test_tsv_layout_reads_the_same(tmp_path):
    rows = default_path().read_text().splitlines()[1:301]
    tsv = tmp_path / "train.txt"
    tsv.write_text("\n".join("\t".join(r.split(",")[1:]) for r in rows) + "\n")
    a, b = load_criteo(tsv, arms=10, max_rows=300), load_criteo(default_path(), arms=10, max_rows=300)
    np.testing.assert_array_equal(a.users, b.users)
    np.testing.assert_array_equal(a.logged_arm, b.logged_arm)


def test_o3m_on_criteo_matches_plaintext_replay():
    cfg = load_config("configs/o3m-criteo.toml", ["o3m.iterations=300"])
    results, _ = run_protocol_inproc(cfg)
    secure, plain = get_protocol("o3m").summarize(cfg, results), plaintext_run(cfg)
    assert secure["series"]["arms"] == plain["series"]["arms"]
    assert secure["matched"] == plain["matched"] > 0
    assert np.abs(np.subtract(secure["series"]["theta_norm"], plain["series"]["theta_norm"])).max() < 1e-9
