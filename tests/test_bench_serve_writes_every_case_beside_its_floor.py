"""`mpcbandit bench serve` at a tiny size, end to end: a real service per case (every party its
own process, CURVE on) under the open-loop client, every column of serve.csv present and
finite, serve-replay's agreement 1.0, the floor positive and below the measured p50 (a lower
bound, not a timing criterion), the PNG, the memory of the long run, and the contexts taken
from the data folder the bench split."""

import csv
import math

import numpy as np
import pytest
from click.testing import CliRunner

from deadlines import needs_quiet
from mpcbandit.cli import main
from mpcbandit.experiments.serve_bench import COLUMNS, LONG_COLUMNS, STAGE_COLUMNS
from mpcbandit.serve.wal import read_records

pytestmark = pytest.mark.slow  # three services, each started, loaded, drained and replayed


def _rows(path):
    with path.open() as f:
        return list(csv.DictReader(f))


def test_bench_serve_writes_every_case_beside_its_floor(tmp_path):
    result = CliRunner().invoke(main, [
        "bench", "serve", "--nets", "loopback,lan", "--rates", "40", "--max-batch", "8",
        "--n", "60", "--reward-delay-ms", "20", "--long", "--long-sizes", "20,50",
        "--long-rate", "50", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    rows = _rows(tmp_path / "serve.csv")
    assert [(r["net"], float(r["offered_rate"]), int(r["max_batch"])) for r in rows] == [
        ("loopback", 40.0, 8), ("lan", 40.0, 8)]
    for r in rows:
        assert list(r) == COLUMNS and r["contexts"] == "post"
        numbers = {c: float(r[c]) for c in COLUMNS if c not in ("net", "contexts")}
        assert all(math.isfinite(v) for v in numbers.values()), r
        assert numbers["agreement"] == 1.0 and numbers["failed"] == 0
        assert numbers["requests"] == 60 and numbers["decisions_per_s"] > 0
        # A = 10: 15 rounds a batch (docs/serve-internals.md) and the 2 of its sequencing
        assert numbers["decision_rounds"] == 17
        assert 0 < numbers["floor_ms"] < numbers["p50_ms"] <= numbers["p95_ms"] <= numbers[
            "p99_ms"]
        assert numbers["rss_mb"] > 0 and numbers["client_cpu_ms_per_decision"] > 0
        assert numbers["parties_cpu_ms_per_decision"] > 0
        assert numbers["wal_fsync_ms"] > 0   # timed on the disk of the services' logs
    lan = rows[1]
    assert float(lan["one_way_ms"]) == 0.25   # the preset's delay
    assert float(lan["floor_ms"]) == pytest.approx(17 * 0.25 + 5)
    # where each case's time went: the stages add up to the client's mean, within a little
    # at p′ between them (the hand-offs of its threads)
    for r, case in zip(_rows(tmp_path / "serve_stages.csv"), rows):
        assert list(r) == STAGE_COLUMNS and r["net"] == case["net"]
        ms = {c: float(r[c]) for c in STAGE_COLUMNS if c != "net"}
        parts = [ms[c] for c in ("slices_ms", "http_ms", "queued_ms", "words_ms", "rounds_ms",
                                 "log_ms")]
        assert all(v > 0 for v in parts), r
        assert 0.8 * ms["mean_ms"] < sum(parts) <= ms["mean_ms"], r
        assert ms["queued_ms"] >= 0.9 * ms["batch_ms"] == 4.5   # a lone request waits it out
        assert ms["ms_per_round"] == pytest.approx(ms["rounds_ms"] / 15)
    cpu = _rows(tmp_path / "serve_cpu.csv")
    assert {r["party"] for r in cpu} == {"feature_holder.0", "feature_holder.1", "arm_puller.0",
                                         "reward_holder.0", "dealer.0"}
    long = _rows(tmp_path / "serve_long.csv")
    assert [int(r["requests"]) for r in long] == [20, 50] and list(long[0]) == LONG_COLUMNS
    assert all(float(r["rss_mb"]) > 0 and float(r["agreement"]) == 1.0 for r in long)
    assert (tmp_path / "serve.png").stat().st_size > 0
    assert "floor_ms" in (tmp_path / "serve.md").read_text()
    # the contexts came from the data folder the bench split (docs/data.md's layout)
    posted = {r["id"]: r["features"] for r in read_records(
        tmp_path / "services" / "loopback-r40-b8" / "feature_holder.1" / "requests.wal")[0]
        if r["kind"] == "context"}
    with (tmp_path / "data" / "feature_holder.1" / "features.csv").open() as f:
        table = {r[0]: [float(v) for v in r[1:]] for r in list(csv.reader(f))[1:]}
    assert len(posted) == 60
    assert all(np.allclose(posted[i], table[i]) for i in posted)


def test_bench_serve_lets_the_holders_look_the_contexts_up_in_their_own_data(tmp_path):
    result = CliRunner().invoke(main, [
        "bench", "serve", "--nets", "loopback", "--rates", "40", "--max-batch", "8", "--n", "30",
        "--contexts", "lookup", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    [row] = _rows(tmp_path / "serve.csv")
    assert row["contexts"] == "lookup" and float(row["agreement"]) == 1.0
    assert float(row["failed"]) == 0
    # the rate over the middle of a 0.75 s schedule: on a busy machine every answer may come
    # after it (0/s, the service behind); every decision was answered all the same
    assert float(row["decisions_per_s"]) > 0 or needs_quiet() is not None
    service = tmp_path / "services" / "loopback-r40-b8"
    # no slice was posted: each holder found its own in its folder of the split data
    assert not [r for r in read_records(service / "feature_holder.0" / "requests.wal")[0]
                if r["kind"] == "context"]
    decided = [r["id"] for r in read_records(service / "arm_puller.0" / "requests.wal")[0]
               if r["kind"] == "decision"]
    assert sorted(decided) == sorted(f"u{t}" for t in range(1, 31))


def test_bench_serve_refuses_to_look_up_more_requests_than_the_data_holds(tmp_path):
    data = tmp_path / "data"
    result = CliRunner().invoke(main, ["data", "split", "hannun-synthetic", "--out", str(data),
                                       "--steps", "20"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, [
        "bench", "serve", "--nets", "loopback", "--rates", "40", "--n", "30", "--contexts",
        "lookup", "--data", str(data), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and "holds 20 ids, 30 requests need as many" in result.output
    assert not (tmp_path / "out" / "services").exists()
