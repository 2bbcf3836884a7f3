"""MNIST's PCA and the features projected on it (seconds of CPU in every party process of an
MNIST run) are computed once and read back from the cache folder after: the same features, bit
for bit, without reading the images again; a torn entry, a changed file or a folder that cannot
be written costs a fit, never an error, a stale basis or stale features."""

import numpy as np
import pytest

from mpcbandit.data import mnist
from mpcbandit.data.mnist import mnist_features


def write_idx(path, array: np.ndarray) -> None:
    """array (uint8) as an IDX file."""
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(n.to_bytes(4, "big") for n in array.shape)
    path.write_bytes(header + array.astype(np.uint8).tobytes())


@pytest.fixture
def digits(tmp_path):
    """A folder of 200 random 8 x 8 "images" (small: a fit stays quick) and their labels, in
    MNIST's file names."""
    rng = np.random.default_rng(7)
    folder = tmp_path / "mnist"
    folder.mkdir()
    write_idx(folder / "train-images-idx3-ubyte", rng.integers(0, 256, (200, 8, 8)))
    write_idx(folder / "train-labels-idx1-ubyte", rng.integers(0, 10, 200))
    return folder


@pytest.fixture
def fits(monkeypatch, tmp_path):
    """The cache in a folder of the test's own; counts the PCA fits."""
    monkeypatch.setenv("MPCBANDIT_CACHE", str(tmp_path / "cache"))
    count = []
    real = mnist.pca_project

    def counting(x, dims, mean=None, basis=None):
        if basis is None:
            count.append(dims)
        return real(x, dims, mean, basis)
    monkeypatch.setattr(mnist, "pca_project", counting)
    return count


def test_a_second_process_reads_the_fitted_basis_and_gets_the_same_features(digits, fits, tmp_path):
    z1, labels1 = mnist_features(digits, 6)
    z2, labels2 = mnist_features(digits, 6)   # as another party process would: no fit
    assert fits == [6]
    assert np.array_equal(z1, z2) and np.array_equal(labels1, labels2)
    assert len(list((tmp_path / "cache").glob("mnist-pca-*.npz"))) == 1
    mnist_features(digits, 4)                 # another dimension is another entry
    assert fits == [6, 4]


def test_a_second_process_reads_the_projected_features_without_the_images(digits, fits,
                                                                          monkeypatch, tmp_path):
    loads = []
    real = mnist.load_mnist
    monkeypatch.setattr(mnist, "load_mnist", lambda *a: loads.append(a) or real(*a))
    z1, labels1 = mnist_features(digits, 6)
    z2, labels2 = mnist_features(digits, 6)   # another party process: reads the features
    assert len(loads) == 1 and fits == [6]
    assert np.array_equal(z1, z2) and np.array_equal(labels1, labels2)
    assert z2.shape == (200, 6) and labels2.dtype == np.int64
    assert len(list((tmp_path / "cache").glob("mnist-features-*.npz"))) == 1


def test_a_torn_cache_entry_is_fitted_again(digits, fits, tmp_path):
    z1, _ = mnist_features(digits, 6)
    entries = list((tmp_path / "cache").glob("mnist-*.npz"))  # the basis and the features
    assert len(entries) == 2
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:100])
    z2, _ = mnist_features(digits, 6)
    assert fits == [6, 6] and np.array_equal(z1, z2)
    z3, _ = mnist_features(digits, 6)         # rewritten whole by the second fit
    assert fits == [6, 6] and np.array_equal(z1, z3)


def test_changed_images_are_fitted_anew(digits, fits):
    z1, _ = mnist_features(digits, 6)
    write_idx(digits / "train-images-idx3-ubyte",
              np.random.default_rng(8).integers(0, 256, (200, 8, 8)))
    z2, _ = mnist_features(digits, 6)
    assert fits == [6, 6] and not np.array_equal(z1, z2)


def test_a_cache_folder_that_cannot_be_made_costs_a_fit_not_an_error(digits, fits, monkeypatch,
                                                                     tmp_path):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("MPCBANDIT_CACHE", str(tmp_path / "a-file" / "cache"))
    z1, _ = mnist_features(digits, 6)
    z2, _ = mnist_features(digits, 6)
    assert fits == [6, 6] and np.array_equal(z1, z2)
