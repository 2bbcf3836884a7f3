"""A party's progress file is rewritten in place; a reader gets the last record or nothing."""

import pytest

from mpcbandit.files import OutputError
from mpcbandit.progress_file import read_progress, write_progress


def test_the_last_record_written_is_read_back_even_when_shorter(tmp_path):
    path = tmp_path / "do.0"
    write_progress(path, 123456, 200000, 987654321)
    write_progress(path, 7, 10, 3)  # in place: no digits of the longer record may remain
    assert read_progress(path) == (7, 10, 3)


def test_a_record_torn_by_a_concurrent_write_counts_as_no_reading(tmp_path):
    path = tmp_path / "do.0"
    write_progress(path, 1999, 5000, 40)
    old = path.read_bytes()
    write_progress(path, 2000, 5000, 41)
    new = path.read_bytes()
    torn = new[:30] + old[30:]  # a read that saw the new iteration and the old rest
    path.write_bytes(torn)
    assert read_progress(path) is None


@pytest.mark.parametrize("content", [b"", b"12 20\n", b"a b c a\n", b"1 2 3 4 5\n"])
def test_an_empty_or_foreign_file_counts_as_no_reading(tmp_path, content):
    path = tmp_path / "p"
    path.write_bytes(content)
    assert read_progress(path) is None
    assert read_progress(tmp_path / "absent") is None


def test_a_progress_file_that_cannot_be_written_is_named(tmp_path):
    with pytest.raises(OutputError, match="nowhere"):
        write_progress(tmp_path / "nowhere" / "do.0", 1, 2, 3)
