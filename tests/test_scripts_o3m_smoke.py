"""The O3M leakage script runs at a tiny size and recovers what it claims."""

from conftest import load_script


def test_leakage_recovers_contexts_from_d_j_known_pairs(tmp_path):
    rows = load_script("o3m_leakage").main(["--iterations", "6", "--partition", "4,3,5", "--arms", "4",
                                            "--out", str(tmp_path)])
    assert (tmp_path / "o3m_leakage.csv").is_file()
    for r in rows:
        assert r["gram_max_abs_error"] < 1e-12 and r["span_rank"] == r["d_j"]
        if r["known_pairs"] >= r["d_j"]:
            assert r["median_rel_error"] < 1e-9 and r["recovered_1e-6"] == 1.0
        else:
            assert r["recovered_1e-6"] < 1.0
