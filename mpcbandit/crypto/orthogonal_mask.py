"""O3M's orthogonal mask (Cao et al. 2023, §4.2): a Haar-random Q in O(d), split by columns.

Q comes from the cryptographic PRG (never numpy's generators): Gaussians by Box-Muller on
53-bit uniforms from AES-CTR, then QR with the sign fix (Mezzadri 2007), which makes Q
Haar-distributed rather than biased towards the QR routine's conventions.
"""

from __future__ import annotations

import numpy as np

from mpcbandit.mpc.prg import Prg

__all__ = ["prg_normal", "haar_orthogonal", "column_blocks", "block_offsets"]


def prg_normal(prg: Prg, shape: int | tuple[int, ...]) -> np.ndarray:
    """Standard normal float64 samples drawn from the PRG (Box-Muller)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    half = (n + 1) // 2
    words = np.frombuffer(prg.bytes(16 * half), dtype="<u8").reshape(2, half)
    u1 = ((words[0] >> np.uint64(11)).astype(np.float64) + 1.0) * 2.0**-53  # (0, 1]
    u2 = (words[1] >> np.uint64(11)).astype(np.float64) * 2.0**-53          # [0, 1)
    radius = np.sqrt(-2.0 * np.log(u1))
    z = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])
    return z[:n].reshape(shape)


def haar_orthogonal(d: int, prg: Prg) -> np.ndarray:
    """A Haar-random d x d orthogonal matrix, never the identity (Cao et al. §4.2)."""
    if d < 2:
        raise ValueError(f"an orthogonal mask needs d >= 2 (for d = 1 it is +-1: no mask), got {d}")
    while True:
        q, r = np.linalg.qr(prg_normal(prg, (d, d)))
        q = q * np.sign(np.diag(r))  # sign fix: without it Q is not Haar
        if not np.allclose(q, np.eye(d)):
            return q


def block_offsets(partition: list[int]) -> list[tuple[int, int]]:
    """[start, stop) of each participant's columns."""
    ends = np.cumsum(partition).tolist()
    return [(e - n, e) for n, e in zip(partition, ends)]


def column_blocks(q: np.ndarray, partition: list[int]) -> list[np.ndarray]:
    """Q = [Q^1 ... Q^M] split by columns, Q^j of shape d x d_j (contiguous copies)."""
    if sum(partition) != q.shape[1]:
        raise ValueError(f"partition {partition} sums to {sum(partition)}, Q has {q.shape[1]} columns")
    return [np.ascontiguousarray(q[:, a:b]) for a, b in block_offsets(partition)]
