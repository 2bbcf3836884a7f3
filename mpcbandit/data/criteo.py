"""Criteo display-ads log as a vertically partitioned bandit stream (Cao et al. 2023, App. D.3).

Reads the Kaggle layout: CSV with a header `Id,Label,I1..I13,C1..C26` (train.csv), or the
original tab-separated train.txt (`Label, I1..I13, C1..C26`, no header). Following D.3:
- user features: the 13 numeric columns (missing -> 0), min-max scaled, times a per-feature
  scaling factor (the paper does not give its factors; default 1);
- item: the 26 categorical values hashed into three values (C1-C9, C10-C18, C19-C26, each
  SHA-256 mod `buckets`), paired (Cantor) into one item label; the `arms` most common labels
  are the arms and only log rows showing one of them are kept; an arm's item features are
  its three hash values, min-max scaled;
- context x_{t,a} = outer addition of user and item features, flattened (d = 13 x 3 = 39).
Rewards by replay (Li et al. 2011): a click counts when the chosen arm is the logged item;
otherwise the round gives no feedback.

The file is read in two streaming passes, so the full 45 M-row log runs in bounded memory:
`scan_criteo` counts the item labels and keeps, per label, the click count, the user features'
minimum and maximum and the item hashes (memory O(labels), at most buckets^3); a
`CriteoCatalog` then reads the kept rows back in chunks (`chunks`, `CriteoReplay` for one row
at a time). `load_criteo` holds every kept row in memory (the 1,999-row sample, tests).
"""

from __future__ import annotations

import csv
import functools
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpcbandit.data import check_file, data_root
from mpcbandit.errors import DataError

__all__ = ["USER_DIMS", "ITEM_DIMS", "DIMS", "SAMPLE", "default_path", "CriteoLog", "CriteoCatalog",
           "CriteoReplay", "scan_criteo", "load_criteo", "outer_add"]

USER_DIMS = 13
ITEM_DIMS = 3
DIMS = USER_DIMS * ITEM_DIMS
CAT_GROUPS = (range(0, 9), range(9, 18), range(18, 26))  # C1-C9, C10-C18, C19-C26
SAMPLE = "criteo/criteo_kaggle_train_first1999.csv"
CHUNK_ROWS = 65_536  # kept rows per chunk read back (~7 MB of user features)


def default_path() -> Path:
    """The shared 1,999-row sample under the data directory ($MPCBANDIT_DATA)."""
    return data_root() / SAMPLE


@dataclass(frozen=True)
class CriteoLog:
    """The kept log rows: user features, logged arm and click; and the arms' item features."""

    users: np.ndarray        # (n, 13) scaled user features
    logged_arm: np.ndarray   # (n,) index of the logged item among the arms
    clicks: np.ndarray       # (n,) 0/1
    items: np.ndarray        # (K, 3) scaled item features of the arms
    labels: np.ndarray       # (K,) item label of each arm (Cantor pairing of the hashes)

    def contexts(self, t: int) -> np.ndarray:
        """x_{t,a} for every arm, shape (K, 39)."""
        return outer_add(self.users[t], self.items)


def outer_add(user: np.ndarray, items: np.ndarray) -> np.ndarray:
    """Rows (u_i + w_k)_{i,k} flattened, one per item: shape (K, d_u * d_i)."""
    return (user[None, :, None] + items[:, None, :]).reshape(items.shape[0], -1)


def _hash(values: list[str], buckets: int) -> int:
    digest = hashlib.sha256("\x1f".join(values).encode()).digest()
    return int.from_bytes(digest[:8], "little") % buckets


def _cantor(a: int, b: int) -> int:
    return (a + b) * (a + b + 1) // 2 + b


def _rows(path: Path, max_rows: int | None):
    """(label, 13 numeric strings, 26 categorical strings) per log line."""
    with open(path, newline="") as f:
        first = f.readline()
        f.seek(0)
        if "\t" in first:
            reader, skip = csv.reader(f, delimiter="\t"), 0
        else:
            reader, skip = csv.reader(f), 1
            header = next(reader)
            if header[:3] != ["Id", "Label", "I1"] or len(header) != 41:
                raise DataError(f"{path}: not the Kaggle Criteo CSV layout (header {header[:4]}...)")
        for n, row in enumerate(reader):
            if max_rows is not None and n >= max_rows:
                return
            row = row[skip:]
            if len(row) != 1 + USER_DIMS + 26:
                raise DataError(f"{path}: line {n + 1 + skip} has {len(row) + skip} fields, "
                                 f"expected {1 + USER_DIMS + 26 + skip}")
            yield int(row[0]), row[1:1 + USER_DIMS], row[1 + USER_DIMS:]


def _scale(a: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Min-max scaling by the given bounds (a constant column scales to 0)."""
    return (a - lo) / np.where(hi > lo, hi - lo, 1.0)


def _parsed(path: Path, max_rows: int | None, buckets: int):
    """(click, 13 user floats, item label, 3 hashes) per log line, naming the file on errors."""
    try:
        for label, num, cat in _rows(path, max_rows):
            hashes = tuple(_hash([cat[i] for i in g], buckets) for g in CAT_GROUPS)
            yield label, [float(v) if v else 0.0 for v in num], _cantor(_cantor(*hashes[:2]), hashes[2]), hashes
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class CriteoCatalog:
    """What one pass over the log learnt: the arms, their item features, the scaling bounds of
    the kept rows' user features, and how many rows are kept; reads the kept rows back."""

    path: Path
    buckets: int
    max_rows: int | None
    labels: np.ndarray       # (K,) item label of each arm, most common first
    items: np.ndarray        # (K, 3) scaled item features
    user_lo: np.ndarray      # (13,) bounds of the kept rows' user features
    user_hi: np.ndarray
    user_scale: np.ndarray | None
    kept: int                # rows showing one of the arms
    kept_clicks: int

    @property
    def click_rate(self) -> float:
        """The kept rows' CTR (the replay's random-policy reference)."""
        return self.kept_clicks / self.kept

    def chunks(self, rows: int = CHUNK_ROWS) -> Iterator[CriteoLog]:
        """The kept rows in order, `rows` at a time, as in-memory logs."""
        arm_of = {int(lab): a for a, lab in enumerate(self.labels)}
        users, arms, clicks = [], [], []
        for click, num, label, _ in _parsed(self.path, self.max_rows, self.buckets):
            if label in arm_of:
                users.append(num)
                arms.append(arm_of[label])
                clicks.append(click)
                if len(arms) == rows:
                    yield self._log(users, arms, clicks)
                    users, arms, clicks = [], [], []
        if arms:
            yield self._log(users, arms, clicks)

    def _log(self, users: list, arms: list, clicks: list) -> CriteoLog:
        u = _scale(np.asarray(users, dtype=np.float64), self.user_lo, self.user_hi)
        if self.user_scale is not None:
            u = u * self.user_scale
        return CriteoLog(users=u, logged_arm=np.asarray(arms, dtype=np.int64),
                         clicks=np.asarray(clicks, dtype=np.int64), items=self.items, labels=self.labels)


class CriteoReplay:
    """Row t of the kept log, read chunk by chunk (forward; going back re-reads the file)."""

    def __init__(self, catalog: CriteoCatalog, chunk_rows: int = CHUNK_ROWS):
        self.catalog, self.chunk_rows = catalog, chunk_rows
        self.horizon = catalog.kept
        self._chunks: Iterator[CriteoLog] | None = None
        self._chunk, self._start = None, 0

    def _seek(self, t: int) -> tuple[CriteoLog, int]:
        if not 0 <= t < self.horizon:
            raise IndexError(f"row {t} of a log of {self.horizon} kept rows")
        if self._chunk is None or t < self._start:
            self._chunks, self._chunk, self._start = self.catalog.chunks(self.chunk_rows), None, 0
        while self._chunk is None or t >= self._start + len(self._chunk.clicks):
            if self._chunk is not None:
                self._start += len(self._chunk.clicks)
            self._chunk = next(self._chunks)
        return self._chunk, t - self._start

    def contexts(self, t: int) -> np.ndarray:
        """x_{t,a} for every arm, shape (K, 39)."""
        chunk, i = self._seek(t)
        return chunk.contexts(i)

    def logged(self, t: int) -> tuple[int, int]:
        """(logged arm, click) of row t."""
        chunk, i = self._seek(t)
        return int(chunk.logged_arm[i]), int(chunk.clicks[i])


def scan_criteo(path: str | Path | None = None, arms: int = 40, buckets: int = 4,
                max_rows: int | None = None, user_scale: np.ndarray | None = None) -> CriteoCatalog:
    """One streaming pass: the `arms` most common item labels and the kept rows' bounds.

    A process scans a given file (same size and modification time) once: every party of an
    in-process run and every baseline run of a figure share the catalog."""
    path = Path(path) if path else default_path()
    if not os.path.lexists(path):
        raise FileNotFoundError(f"Criteo data not found at {path} (set MPCBANDIT_DATA or o3m.data_path)")
    st = check_file(path).stat()  # a DataError naming it if it is a folder, a FIFO, denied, ...
    scale = None if user_scale is None else tuple(float(v) for v in np.ravel(user_scale))
    return _scan(path.resolve(), st.st_size, st.st_mtime_ns, arms, buckets, max_rows, scale)


@functools.lru_cache(maxsize=8)
def _scan(path: Path, size: int, mtime_ns: int, arms: int, buckets: int, max_rows: int | None,
          user_scale: tuple[float, ...] | None) -> CriteoCatalog:
    count, clicks, lo, hi, first, order = {}, {}, {}, {}, {}, {}
    for click, num, label, hashes in _parsed(path, max_rows, buckets):
        if label not in count:
            count[label], clicks[label], first[label], order[label] = 0, 0, hashes, len(order)
            lo[label], hi[label] = list(num), list(num)
        count[label] += 1
        clicks[label] += click
        lo[label] = [min(a, b) for a, b in zip(lo[label], num)]
        hi[label] = [max(a, b) for a, b in zip(hi[label], num)]
    # most common first, ties in order of first appearance (as Counter.most_common)
    ranked = sorted(count, key=lambda lab: (-count[lab], order[lab]))[:arms]
    if len(ranked) < arms:
        raise ValueError(f"{path}: only {len(ranked)} distinct item labels, {arms} arms asked")
    arm_hashes = np.asarray([first[lab] for lab in ranked], dtype=np.float64)
    return CriteoCatalog(
        path=path, buckets=buckets, max_rows=max_rows, labels=np.asarray(ranked, dtype=np.int64),
        items=_scale(arm_hashes, arm_hashes.min(axis=0), arm_hashes.max(axis=0)),
        user_lo=np.min([lo[lab] for lab in ranked], axis=0),
        user_hi=np.max([hi[lab] for lab in ranked], axis=0),
        user_scale=None if user_scale is None else np.asarray(user_scale, dtype=np.float64),
        kept=sum(count[lab] for lab in ranked), kept_clicks=sum(clicks[lab] for lab in ranked))


def load_criteo(path: str | Path | None = None, arms: int = 40, buckets: int = 4,
                max_rows: int | None = None, user_scale: np.ndarray | None = None) -> CriteoLog:
    """Read a Criteo log and build the D.3 bandit stream with the `arms` most common items,
    every kept row in memory (for the full log, use `scan_criteo` and `CriteoReplay`)."""
    catalog = scan_criteo(path, arms, buckets, max_rows, user_scale)
    (log,) = catalog.chunks(rows=catalog.kept)
    return log
