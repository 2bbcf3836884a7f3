"""SAMBA arm files and the builders of their Bernoulli means from raw rating data (§6.1).

An arm file is: first line K, then one mean per line. Experiments sort the means in
decreasing order and keep the first K (the K items with the largest mean rewards). The mean of
item i is (#ratings of i at or above a threshold) / (#ratings of i), as §6.1 describes; the
authors' shipped files divide by the number of users instead (a missing rating counts as
below the threshold), which ``denominator="users"`` reproduces.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from mpcbandit.data import read_data_file
from mpcbandit.errors import DataError

__all__ = ["read_arm_file", "top_means", "write_arm_file", "movielens_means", "jester_means",
           "synthetic_means", "JESTER_MISSING"]

JESTER_MISSING = 99.0


def read_arm_file(path: str | Path) -> np.ndarray:
    """All means of an arm file, in file order (checks the K header and the range)."""
    path = Path(path)
    try:
        text = read_data_file(path).decode()
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise DataError(f"{path}: empty arm file")
    try:
        k = int(lines[0])
        means = np.array([float(v) for v in lines[1:]], dtype=float)
    except ValueError as e:
        raise DataError(f"{path}: not an arm file (first line K, then one mean per line): {e}") from None
    if len(means) != k:
        raise DataError(f"{path}: header says {k} arms but {len(means)} means follow")
    if np.any((means < 0) | (means > 1)):
        raise DataError(f"{path}: Bernoulli means must lie in [0, 1]")
    return means


def top_means(means: np.ndarray, k: int) -> np.ndarray:
    """The k largest means, in decreasing order."""
    if k > len(means):
        raise ValueError(f"asked for {k} arms but only {len(means)} are available")
    return np.sort(np.asarray(means, dtype=float))[::-1][:k].copy()


def write_arm_file(path: str | Path, means) -> None:
    """Write means as an arm file."""
    means = list(means)
    Path(path).write_text(f"{len(means)}\n" + "".join(f"{m!r}\n" for m in map(float, means)))


def synthetic_means(seed: int, k: int) -> np.ndarray:
    """k means uniform in [0, 1), reproducible from seed (no file needed)."""
    from mpcbandit.protocols import seeded_rng

    return np.sort(seeded_rng(seed, "samba/synthetic-means").uniform(0.0, 1.0, k))[::-1].copy()


def _means(items: np.ndarray, ratings: np.ndarray, threshold: float, users: int,
           denominator: str) -> dict[int, float]:
    ids, inverse = np.unique(items, return_inverse=True)
    good = np.bincount(inverse, weights=(ratings >= threshold).astype(float), minlength=len(ids))
    if denominator == "ratings":
        total = np.bincount(inverse, minlength=len(ids)).astype(float)
    elif denominator == "users":
        total = np.full(len(ids), float(users))
    else:
        raise ValueError(f"denominator must be 'ratings' or 'users', got {denominator!r}")
    return {int(i): float(g / n) for i, g, n in zip(ids, good, total)}


def movielens_means(path: str | Path, threshold: float = 4.0,
                    denominator: str = "ratings") -> dict[int, float]:
    """item id -> mean from MovieLens ``u.data`` (user TAB item TAB rating TAB time) or
    ``ratings.csv`` (userId,movieId,rating,timestamp with a header)."""
    path = Path(path)
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            rows = list(csv.reader(f))
        if not rows or rows[0][:3] != ["userId", "movieId", "rating"]:
            raise ValueError(f"{path}: expected a header userId,movieId,rating,...")
        data = np.array([[float(r[0]), float(r[1]), float(r[2])] for r in rows[1:] if r], dtype=float)
    else:
        data = np.loadtxt(path, dtype=float, usecols=(0, 1, 2), ndmin=2)
    if data.size == 0:
        raise ValueError(f"{path}: no ratings")
    users = len(np.unique(data[:, 0]))
    return _means(data[:, 1].astype(np.int64), data[:, 2], threshold, users, denominator)


def jester_means(path: str | Path, threshold: float = 4.5,
                 denominator: str = "ratings") -> dict[int, float]:
    """joke number (1-based) -> mean from a Jester ratings table: one user per row, first
    column the number of jokes rated, then one rating in [-10, 10] per joke, 99 = not rated
    (comma- or whitespace-separated text)."""
    path = Path(path)
    text = path.read_text()
    delim = "," if "," in text.splitlines()[0] else None
    table = np.loadtxt(path, dtype=float, delimiter=delim, ndmin=2)
    if table.shape[1] < 2:
        raise ValueError(f"{path}: expected a count column then one column per joke")
    ratings = table[:, 1:]
    users, jokes = ratings.shape
    rated = ratings != JESTER_MISSING
    item_ids = np.broadcast_to(np.arange(1, jokes + 1), ratings.shape)
    if denominator == "users":  # the authors' files: missing -> -10, so never above threshold
        filled = np.where(rated, ratings, -10.0)
        return _means(item_ids.ravel(), filled.ravel(), threshold, users, "users")
    return _means(item_ids[rated], ratings[rated], threshold, users, "ratings")
