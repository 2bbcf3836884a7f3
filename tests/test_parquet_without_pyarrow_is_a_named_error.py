"""Writing a .parquet table (`mpcbandit data split --format parquet`) without the optional
pyarrow is a DataError naming the extra to install, and leaves no empty file behind."""

import sys

import pytest

from mpcbandit.data.tables import TableWriter
from mpcbandit.errors import DataError


def test_a_parquet_writer_without_pyarrow_names_the_extra_and_makes_no_file(tmp_path,
                                                                             monkeypatch):
    for name in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, name, None)   # import fails as if not installed
    path = tmp_path / "features.parquet"
    with pytest.raises(DataError, match=r'needs pyarrow: pip install -e "\.\[parquet\]"'):
        TableWriter(path, ["x0", "x1"], 3)
    assert not path.exists()
