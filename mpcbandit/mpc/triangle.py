"""Upper triangles of symmetric D x D matrices, row by row: the index maps and the two products
the engine computes on them, on plain ring arrays (the dealer derives its triples with the same
functions, so a triple and the product it masks cannot disagree)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

__all__ = ["triangle", "mirror_index", "sym_matvec", "outer_upper"]


@lru_cache(maxsize=None)
def triangle(d: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the upper triangle of a D x D matrix, row by row (E = D(D+1)/2)."""
    return np.triu_indices(d)


@lru_cache(maxsize=None)
def mirror_index(d: int) -> np.ndarray:
    """(D, D) positions into the triangle: t[..., mirror_index(d)] is the symmetric matrix."""
    rows, cols = triangle(d)
    pos = np.zeros((d, d), dtype=np.int64)
    pos[rows, cols] = pos[cols, rows] = np.arange(len(rows))
    return pos


def sym_matvec(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """M v for the symmetric matrices M (..., D, D) whose triangles t (..., E) are given and
    vectors v (..., D) broadcast against M's batch axes."""
    d = v.shape[-1]
    return np.matmul(t[..., mirror_index(d)], v[..., None])[..., 0]


def outer_upper(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The upper triangles (..., E) of p qᵀ for vectors p, q (..., D)."""
    rows, cols = triangle(p.shape[-1])
    return p[..., rows] * q[..., cols]
