"""The Criteo log streams: a replay reads the kept rows chunk by chunk (so the full 45 M-row log
runs in bounded memory) and gives exactly the rows the in-memory loader gives."""

import tracemalloc

import numpy as np
import pytest

from mpcbandit.data.criteo import CriteoReplay, load_criteo, scan_criteo

# the quick tier (-m "not slow") leaves it out; one worker runs the module, so its module
# fixture runs once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("criteo-log")]

ROWS, ARMS, CHUNK = 20_000, 10, 500


@pytest.fixture(scope="module")
def log_file(tmp_path_factory):
    """A Kaggle-layout log with few distinct categorical values, so item labels repeat."""
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("criteo") / "train.csv"
    header = ["Id", "Label", *[f"I{i}" for i in range(1, 14)], *[f"C{i}" for i in range(1, 27)]]
    cats = rng.integers(0, 3, size=(ROWS, 26))
    nums = rng.integers(0, 1000, size=(ROWS, 13))
    clicks = rng.random(ROWS) < 0.25
    with path.open("w") as f:
        f.write(",".join(header) + "\n")
        for i in range(ROWS):
            num = ["" if v % 17 == 0 else str(v) for v in nums[i]]  # some missing values
            f.write(",".join([str(i), str(int(clicks[i])), *num, *[f"c{v:x}" for v in cats[i]]]) + "\n")
    return path


def test_replay_gives_the_rows_of_the_in_memory_log(log_file):
    whole = load_criteo(log_file, arms=ARMS)
    catalog = scan_criteo(log_file, arms=ARMS)
    assert catalog.kept == len(whole.clicks) > 5 * CHUNK
    assert catalog.click_rate == pytest.approx(whole.clicks.mean())
    replay = CriteoReplay(catalog, chunk_rows=CHUNK)
    for t in range(catalog.kept):
        assert replay.logged(t) == (whole.logged_arm[t], whole.clicks[t])
        if t % 101 == 0:
            np.testing.assert_array_equal(replay.contexts(t), whole.contexts(t))
    np.testing.assert_array_equal(replay.contexts(3), whole.contexts(3))  # going back re-reads
    with pytest.raises(IndexError):
        replay.contexts(catalog.kept)


def _peak_bytes(fn) -> int:
    tracemalloc.reset_peak()
    fn()
    return tracemalloc.get_traced_memory()[1]


def test_replay_memory_does_not_grow_with_the_log(log_file):
    tracemalloc.start()
    try:
        catalog = scan_criteo(log_file, arms=ARMS)

        def replay_rows(n):
            def run():
                replay = CriteoReplay(catalog, chunk_rows=CHUNK)
                for t in range(n):
                    replay.logged(t)
            return run
        quarter = _peak_bytes(replay_rows(catalog.kept // 4))
        whole = _peak_bytes(replay_rows(catalog.kept))
        in_memory = _peak_bytes(lambda: load_criteo(log_file, arms=ARMS))
    finally:
        tracemalloc.stop()
    # four times the rows, about the same peak (one chunk); the loader's grows with the rows
    assert whole < 1.5 * quarter, (quarter, whole)
    assert in_memory > 3 * whole, (whole, in_memory)


def test_a_process_scans_a_file_once_and_again_when_it_changes(tmp_path, log_file):
    copy = tmp_path / "train.csv"
    copy.write_bytes(log_file.read_bytes())
    first = scan_criteo(copy, arms=ARMS)
    assert scan_criteo(copy, arms=ARMS) is first  # every party of an in-process run shares it
    lines = copy.read_text().splitlines(keepends=True)
    copy.write_text("".join(lines[: len(lines) // 2]))
    assert scan_criteo(copy, arms=ARMS).kept < first.kept
