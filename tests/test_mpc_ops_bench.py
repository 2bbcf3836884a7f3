"""`mpcbandit bench mpc-ops` at a tiny size: every op timed with real processes beside numpy,
rounds counted for more parties than are timed, the paper's column beside ours."""

import csv

from click.testing import CliRunner

from mpcbandit.cli import main


def test_bench_times_every_op_and_counts_rounds_for_more_parties(tmp_path):
    result = CliRunner().invoke(main, [
        "bench", "mpc-ops", "--size", "16", "--arms", "4", "--repeats", "1", "--parties", "2",
        "--rounds-parties", "2,3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with (tmp_path / "mpc_ops.csv").open() as f:
        rows = list(csv.DictReader(f))
    timed = {r["op"]: r for r in rows if r["parties"] == "2"}
    assert set(timed) == {"add", "mul", "lt", "argmax", "reciprocal", "exp"}
    assert timed["add"]["rounds"] == "0" and timed["mul"]["rounds"] == "1"
    assert timed["lt"]["rounds"] == "7" and timed["argmax"]["size"] == "4"
    assert timed["mul"]["paper_rounds"] == "2"
    assert int(timed["mul"]["bytes_per_party"]) > 2 * 16 * 8 * 2  # two masked 16-element openings
    for r in timed.values():
        assert float(r["slowdown"]) == float(r["median_s"]) / float(r["plaintext_s"])
    counted = {r["op"]: r for r in rows if r["parties"] == "3"}
    assert counted["mul"]["rounds"] == "2" and counted["lt"]["rounds"] == "7"
    assert counted["mul"]["median_s"] == ""  # counted in one process, not timed
    assert "transport's floor): 2 parties" in (tmp_path / "mpc_ops.md").read_text()
