"""`mpcbandit bench o3m-leakage`, played as the AP at a tiny size: the Gram matrix and the
subspace of every passive participant's contexts leak exactly, and d_j known pairs rebuild
every context (fewer rebuild only the known ones)."""

import csv

from click.testing import CliRunner

from mpcbandit.cli import main


def test_the_ap_rebuilds_every_context_from_d_j_known_pairs(tmp_path):
    result = CliRunner().invoke(main, ["bench", "o3m-leakage", "--iterations", "6",
                                       "--partition", "4,3,5", "--arms", "4",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with (tmp_path / "o3m_leakage.csv").open() as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    assert {r["participant"] for r in rows} == {1.0, 2.0}  # the passive participants
    for r in rows:
        assert r["gram_max_abs_error"] < 1e-12 and r["span_rank"] == r["d_j"]
        if r["known_pairs"] >= r["d_j"]:
            assert r["median_rel_error"] < 1e-9 and r["recovered_1e-6"] == 1.0
        else:
            assert r["recovered_1e-6"] < 1.0
    assert "recovered = share" in (tmp_path / "o3m_leakage.md").read_text()
