"""Noise for the tree-based mechanism, drawn from a cryptographic source.

Privacy noise must be unpredictable to the other parties, so it comes from
``mpcbandit.mpc.prg.Prg`` (AES-256-CTR) and not from numpy's generators: uniforms from the
keystream, normals by Box-Muller, chi-squares by Marsaglia-Tsang (gamma), Wishart matrices by
the Bartlett decomposition. ``NormalSource(seed=...)`` gives a reproducible stream (tests,
figures); ``NormalSource()`` seeds from os.urandom (deployments). ``keyed_source(key, label)`` is
the source of one draw named by label: the same key and label give the same noise, any other
label noise independent of it (HMAC-SHA256 as the PRF).
"""

from __future__ import annotations

import hashlib
import hmac

import numpy as np

from mpcbandit.mpc.prg import Prg

__all__ = ["NormalSource", "symmetric_gaussian", "wishart", "seeded_source", "keyed_source"]


class NormalSource:
    """Uniform, normal and chi-square variates from an AES-CTR keystream."""

    def __init__(self, seed: bytes | None = None):
        self.prg = Prg(seed)

    def uniform(self, n: int) -> np.ndarray:
        """n uniforms in (0, 1] with 53 random bits each."""
        words = np.frombuffer(self.prg.bytes(8 * n), dtype="<u8")
        return ((words >> np.uint64(11)).astype(np.float64) + 1.0) / 2.0**53

    def normal(self, shape: int | tuple[int, ...]) -> np.ndarray:
        """Standard normals of the given shape (Box-Muller, both halves used)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = int(np.prod(shape, dtype=np.int64))
        half = (n + 1) // 2
        u = self.uniform(2 * half)
        r = np.sqrt(-2.0 * np.log(u[:half]))
        angle = 2.0 * np.pi * u[half:]
        return np.concatenate([r * np.cos(angle), r * np.sin(angle)])[:n].reshape(shape)

    def gamma(self, shape: np.ndarray) -> np.ndarray:
        """Gamma(shape, 1) variates, one per entry of shape (Marsaglia & Tsang 2000)."""
        a = np.atleast_1d(np.asarray(shape, dtype=np.float64))
        if np.any(a <= 0):
            raise ValueError("gamma shape must be > 0")
        boost = a < 1.0  # Gamma(a) = Gamma(a + 1) * U^(1/a)
        a1 = np.where(boost, a + 1.0, a)
        dd = a1 - 1.0 / 3.0
        c = 1.0 / np.sqrt(9.0 * dd)
        out = np.empty_like(a1)
        todo = np.arange(a1.size)
        while todo.size:
            x = self.normal(todo.size)
            v = (1.0 + c[todo] * x) ** 3
            u = self.uniform(todo.size)
            with np.errstate(invalid="ignore", divide="ignore"):
                ok = (v > 0) & (np.log(u) < 0.5 * x * x + dd[todo] - dd[todo] * v
                                + dd[todo] * np.log(np.where(v > 0, v, 1.0)))
            out[todo[ok]] = dd[todo[ok]] * v[ok]
            todo = todo[~ok]
        if np.any(boost):
            out[boost] *= self.uniform(int(boost.sum())) ** (1.0 / a[boost])
        return out.reshape(np.shape(shape))

    def chisquare(self, df: np.ndarray) -> np.ndarray:
        """Chi-square variates with the given degrees of freedom."""
        return 2.0 * self.gamma(np.asarray(df, dtype=np.float64) / 2.0)


def seeded_source(seed: int, purpose: str) -> NormalSource:
    """A reproducible NormalSource for (seed, purpose): for tests and figures, not deployments."""
    return NormalSource(hashlib.sha256(f"dp-noise/{seed}/{purpose}".encode()).digest())


def keyed_source(key: bytes, label: bytes) -> NormalSource:
    """The source of the draw named label under a secret key (a PRF: HMAC-SHA256)."""
    return NormalSource(hmac.new(key, label, hashlib.sha256).digest())


def symmetric_gaussian(src: NormalSource, dim: int, sigma: float) -> np.ndarray:
    """(Z + Z^T)/sqrt(2) with Z_ij ~ N(0, sigma^2): off-diagonal variance sigma^2, diagonal 2 sigma^2."""
    z = sigma * src.normal((dim, dim))
    return (z + z.T) / np.sqrt(2.0)


def wishart(src: NormalSource, dim: int, scale2: float, k: int) -> np.ndarray:
    """A draw of W_dim(scale2 * I, k) by the Bartlett decomposition (always PSD; k >= dim)."""
    if k < dim:
        raise ValueError(f"Wishart degrees of freedom k={k} must be >= dimension {dim}")
    a = np.zeros((dim, dim))
    a[np.diag_indices(dim)] = np.sqrt(src.chisquare(k - np.arange(dim)))
    low = np.tril_indices(dim, -1)
    a[low] = src.normal(len(low[0]))
    return scale2 * (a @ a.T)
