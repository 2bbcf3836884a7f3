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
"""

from __future__ import annotations

import csv
import hashlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mpcbandit.data import data_root
from mpcbandit.errors import DataError

__all__ = ["USER_DIMS", "ITEM_DIMS", "DIMS", "SAMPLE", "default_path", "CriteoLog", "load_criteo",
           "outer_add"]

USER_DIMS = 13
ITEM_DIMS = 3
DIMS = USER_DIMS * ITEM_DIMS
CAT_GROUPS = (range(0, 9), range(9, 18), range(18, 26))  # C1-C9, C10-C18, C19-C26
SAMPLE = "criteo/criteo_kaggle_train_first1999.csv"


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


def _min_max(a: np.ndarray) -> np.ndarray:
    lo, hi = a.min(axis=0), a.max(axis=0)
    return (a - lo) / np.where(hi > lo, hi - lo, 1.0)


def load_criteo(path: str | Path | None = None, arms: int = 40, buckets: int = 4,
                max_rows: int | None = None, user_scale: np.ndarray | None = None) -> CriteoLog:
    """Read a Criteo log and build the D.3 bandit stream with the `arms` most common items."""
    path = Path(path) if path else default_path()
    if not path.is_file():
        raise FileNotFoundError(f"Criteo data not found at {path} (set MPCBANDIT_DATA or o3m.data_path)")
    clicks, numeric, hashes = [], [], []
    try:
        for label, num, cat in _rows(path, max_rows):
            clicks.append(label)
            numeric.append([float(v) if v else 0.0 for v in num])
            hashes.append(tuple(_hash([cat[i] for i in g], buckets) for g in CAT_GROUPS))
    except (OSError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None
    item_label = [_cantor(_cantor(h[0], h[1]), h[2]) for h in hashes]
    common = Counter(item_label).most_common(arms)
    if len(common) < arms:
        raise ValueError(f"{path}: only {len(common)} distinct item labels, {arms} arms asked")
    labels = [lab for lab, _ in common]
    arm_of = {lab: a for a, lab in enumerate(labels)}
    keep = [i for i, lab in enumerate(item_label) if lab in arm_of]
    users = _min_max(np.asarray(numeric, dtype=np.float64)[keep])
    if user_scale is not None:
        users = users * np.asarray(user_scale, dtype=np.float64)
    arm_hashes = np.asarray([hashes[item_label.index(lab)] for lab in labels], dtype=np.float64)
    return CriteoLog(users=users, logged_arm=np.asarray([arm_of[item_label[i]] for i in keep]),
                     clicks=np.asarray(clicks, dtype=np.int64)[keep], items=_min_max(arm_hashes),
                     labels=np.asarray(labels, dtype=np.int64))
