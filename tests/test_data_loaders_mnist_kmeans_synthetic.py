import gzip
import struct

import numpy as np
import pytest

from mpcbandit.data import data_root
from mpcbandit.errors import DataError
from mpcbandit.data.kmeans import kernel_probabilities, kmeans
from mpcbandit.data.mnist import load_mnist, pca_project, read_idx
from mpcbandit.data.tasks import make_task


def _idx_bytes(arr: np.ndarray) -> bytes:
    return bytes([0, 0, 0x08, arr.ndim]) + b"".join(struct.pack(">I", n) for n in arr.shape) + arr.tobytes()


def test_read_idx_reads_raw_and_gzip_and_rejects_garbage(tmp_path):
    arr = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    (tmp_path / "a").write_bytes(_idx_bytes(arr))
    (tmp_path / "a.gz").write_bytes(gzip.compress(_idx_bytes(arr)))
    np.testing.assert_array_equal(read_idx(tmp_path / "a"), arr)
    np.testing.assert_array_equal(read_idx(tmp_path / "a.gz"), arr)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04rest")
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(_idx_bytes(arr)[:-1])
    with pytest.raises(ValueError, match="header says shape"):
        read_idx(tmp_path / "short")
    damaged = gzip.compress(_idx_bytes(arr))
    for name, data in (("cut.gz", damaged[:-9]), ("flipped.gz", damaged[:12] + b"\xff" * 8 + damaged[20:])):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(DataError, match=f"{name}: cannot read it"):
            read_idx(tmp_path / name)


def test_pca_project_gives_unit_rows_on_top_components():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 3)) @ np.diag([5.0, 2.0, 0.1]) + 7.0
    z, mean, basis = pca_project(x, 2)
    np.testing.assert_allclose(np.linalg.norm(z, axis=1), 1.0)
    np.testing.assert_allclose(mean, x.mean(0))
    np.testing.assert_allclose(np.abs(basis), [[1, 0], [0, 1], [0, 0]], atol=0.05)


def test_kmeans_finds_separated_clusters_and_kernel_rows_sum_to_one():
    rng = np.random.default_rng(1)
    centres = np.array([[5.0, 0.0], [-5.0, 0.0], [0.0, 5.0]])
    x = centres[rng.integers(0, 3, 600)] + 0.1 * rng.standard_normal((600, 2))
    found = kmeans(x, 3, np.random.default_rng(2))
    dist = np.linalg.norm(found[:, None] - centres[None], axis=2)
    assert np.all(dist.min(axis=0) < 0.05)
    nu = kernel_probabilities(x, found, sigma=0.5)
    np.testing.assert_allclose(nu.sum(1), 1.0)
    assert np.all(nu.max(1) > 0.99)  # well-separated points belong to their cluster


def test_synthetic_task_is_reproducible_unit_norm_one_hot():
    a = make_task("synthetic", iterations=50, dims=6, arms=4, seed=3)
    b = make_task("synthetic", iterations=50, dims=6, arms=4, seed=3)
    np.testing.assert_array_equal(a.contexts, b.contexts)
    np.testing.assert_allclose(np.linalg.norm(a.contexts, axis=1), 1.0)
    np.testing.assert_array_equal(a.rewards.sum(1), 1.0)
    assert a.contexts.shape == (50, 6) and a.arms == 4


def _have_mnist() -> bool:
    return (data_root() / "mnist" / "train-labels-idx1-ubyte.gz").exists()


@pytest.mark.skipif(not _have_mnist(), reason="MNIST not found (set MPCBANDIT_DATA)")
def test_mnist_task_has_20_unit_pca_features_and_digit_rewards():
    images, labels = load_mnist(data_root() / "mnist", "test")
    assert images.shape == (10_000, 784) and set(np.unique(labels)) == set(range(10))
    d = make_task("mnist", iterations=300, dims=20, arms=10, seed=0)
    assert d.contexts.shape == (300, 20)
    np.testing.assert_allclose(np.linalg.norm(d.contexts, axis=1), 1.0)
    np.testing.assert_array_equal(d.rewards.sum(1), 1.0)
    k = make_task("kmeans", iterations=300, dims=20, arms=30, seed=0)
    assert k.rewards.shape == (300, 30) and set(np.unique(k.rewards)) <= {0.0, 1.0}
    np.testing.assert_allclose(k.expected.sum(1), 1.0)
