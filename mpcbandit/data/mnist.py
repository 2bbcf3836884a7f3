"""MNIST from the standard IDX files (``.gz`` or raw), projected as in Hannun et al. §5:
pixels scaled to [0, 1], centred, projected on the first principal components (numpy SVD of
the covariance), each vector normalised to unit length."""

from __future__ import annotations

import functools
import gzip
import os
import stat
import threading
import zlib
from pathlib import Path

import numpy as np

from mpcbandit.data import check_file, read_data_file
from mpcbandit.data.fit_cache import digest_files, fitted
from mpcbandit.errors import DataError

__all__ = ["read_idx", "load_mnist", "pca_project", "mnist_features", "mnist_present",
           "cached_features"]

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def mnist_present(directory: Path) -> bool:
    """Whether directory holds MNIST's training images (gzip-compressed or not); a DataError
    naming it if it is not a folder or cannot be searched."""
    try:
        return _find(Path(directory), _FILES["train"][0]) is not None
    except FileNotFoundError:
        return False


def read_idx(path: Path) -> np.ndarray:
    """The array stored in one IDX file (gzip-compressed or not)."""
    path = Path(path)
    raw = read_data_file(path)
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise DataError(f"{path}: cannot read it ({type(e).__name__}: {e})") from None
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise DataError(f"{path}: not an IDX file (bad magic {raw[:4].hex()})")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_DTYPES[raw[2]])
    start = 4 + 4 * ndim
    count = int(np.prod(shape, dtype=np.int64))
    if len(raw) - start != count * dtype.itemsize:
        raise DataError(f"{path}: header says shape {shape} but the file holds "
                         f"{len(raw) - start} data bytes")
    return np.frombuffer(raw, dtype=dtype, offset=start, count=count).reshape(shape)


def _find(directory: Path, stem: str) -> Path:
    """directory/stem.gz or directory/stem; FileNotFoundError if neither is there, a DataError
    naming the folder if it cannot be searched (a file, permission denied, ...)."""
    try:
        if not stat.S_ISDIR(os.stat(directory).st_mode):
            raise DataError(f"{directory}: cannot read it: a file, not the MNIST folder")
        for name in (stem + ".gz", stem):
            try:
                os.stat(directory / name)
                return directory / name
            except FileNotFoundError:
                pass
    except FileNotFoundError:
        pass
    except OSError as e:
        raise DataError(f"{directory}: cannot read it ({type(e).__name__}: {e})") from None
    raise FileNotFoundError(f"MNIST file {stem}[.gz] not found in {directory}")


def load_mnist(directory: Path, split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """(images N x 784 uint8, labels N) of the train or test split."""
    images_stem, labels_stem = _FILES[split]
    try:
        images = read_idx(_find(Path(directory), images_stem))
        labels = read_idx(_find(Path(directory), labels_stem))
    except FileNotFoundError as e:
        raise DataError(str(e)) from None
    if images.shape[0] != labels.shape[0]:
        raise DataError(f"MNIST {split} in {directory}: {images.shape[0]} images but "
                        f"{labels.shape[0]} labels")
    return images.reshape(images.shape[0], -1), labels.astype(np.int64)


def pca_project(x: np.ndarray, dims: int, mean: np.ndarray | None = None,
                basis: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre x and project it on its first dims principal directions, rows unit-normalised.

    Returns (projected, mean, basis); pass mean and basis to project other data the same way.
    """
    if mean is None:
        mean = x.mean(axis=0)
    xc = x - mean
    if basis is None:
        # right singular vectors of the centred data = eigenvectors of its covariance
        _, _, vt = np.linalg.svd(xc.T @ xc, hermitian=True)
        basis = vt[:dims].T
        basis *= np.where(basis[np.argmax(np.abs(basis), axis=0), range(dims)] < 0, -1.0, 1.0)
    z = xc @ basis
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return z / np.where(norms > 0, norms, 1.0), mean, basis


def mnist_features(directory: Path, dims: int = 20, split: str = "train",
                   fit_split: str = "train") -> tuple[np.ndarray, np.ndarray]:
    """(unit-norm PCA features N x dims, labels N); the PCA is fitted on fit_split and split
    projected on it, each once per machine (data/fit_cache.py keeps the mean and basis, and
    the features with their labels: a later process reads them instead of the images)."""
    key = _features_key(Path(directory), dims, split, fit_split)
    if key is None:  # a file missing or unreadable: loading the images names it
        return _projected(directory, dims, split, fit_split)

    def project() -> dict[str, np.ndarray]:
        z, labels = _projected(directory, dims, split, fit_split)
        return {"features": z, "labels": labels}

    got = fitted("mnist-features", key, ("features", "labels"), project)
    z, labels = got["features"], got["labels"]
    if z.ndim != 2 or z.shape[1] != dims or labels.shape != (z.shape[0],):
        return _projected(directory, dims, split, fit_split)  # another shape: never trusted
    return z, labels


def _features_key(directory: Path, dims: int, split: str, fit_split: str) -> str | None:
    """The digest of what split's features depend on (its images and labels, the images the
    PCA is fitted on, dims); None if one of those files is not there or not a regular file."""
    try:
        files = [check_file(_find(directory, stem))
                 for stem in (*_FILES[split], _FILES[fit_split][0])]
    except (FileNotFoundError, DataError):
        return None
    return digest_files(*dict.fromkeys(files), extra=f"dims={dims} fit={fit_split}")


def _projected(directory: Path, dims: int, split: str,
               fit_split: str) -> tuple[np.ndarray, np.ndarray]:
    """split's images projected on the PCA of fit_split's (the PCA read from the cache)."""
    images, labels = load_mnist(directory, split)

    def fit() -> dict[str, np.ndarray]:
        fit_images = images if fit_split == split else load_mnist(directory, fit_split)[0]
        _, mean, basis = pca_project(fit_images.astype(np.float64) / 255.0, dims)
        return {"mean": mean, "basis": basis}

    source = _find(Path(directory), _FILES[fit_split][0])
    pca = fitted("mnist-pca", digest_files(source, extra=f"dims={dims}"), ("mean", "basis"), fit)
    if pca["mean"].shape != (images.shape[1],) or pca["basis"].shape != (images.shape[1], dims):
        pca = fit()   # an entry of another shape under this digest: never trusted
    z, _, _ = pca_project(images.astype(np.float64) / 255.0, dims, pca["mean"], pca["basis"])
    return z, labels


_LOCK = threading.RLock()  # in-process runs: parties in threads share one computation


@functools.lru_cache(maxsize=4)
def _cached(directory: str, dims: int, split: str) -> tuple[np.ndarray, np.ndarray]:
    return mnist_features(Path(directory), dims, split=split)


def cached_features(directory: str | Path, dims: int, split: str) -> tuple[np.ndarray, np.ndarray]:
    """mnist_features of (directory, dims, split), computed once per process."""
    with _LOCK:
        return _cached(str(directory), dims, split)
