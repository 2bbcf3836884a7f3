"""Wishart regularizers are always PSD; shifted Gaussian and shifted Wishart ones are PSD w.h.p.
at paper settings, and both Wishart variants stay inside their (alpha/2n)-accurate bounds."""

import numpy as np
import pytest

from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source, wishart
from mpcbandit.dp.privatizer import Privatizer
from mpcbandit.dp.tree import TreeMechanism


def _eig_range_of_releases(params, seed: int, trees: int, steps: int) -> np.ndarray:
    """(smallest, largest) eigenvalue of H_t for every release t of `trees` fresh trees."""
    src = seeded_source(seed, "psd-test")
    eigs = []
    for _ in range(trees):
        priv = Privatizer(params, src)
        eigs.append(np.linalg.eigvalsh(priv.initial()[0])[[0, -1]])
        for _ in range(steps):
            gram, _ = priv.privatize(np.zeros((params.dims + 1, params.dims + 1)))
            eigs.append(np.linalg.eigvalsh(gram)[[0, -1]])
    return np.array(eigs)


def _min_eig_of_releases(params, seed: int, trees: int, steps: int) -> np.ndarray:
    return _eig_range_of_releases(params, seed, trees, steps)[:, 0]


def test_wishart_node_is_psd_even_with_few_degrees_of_freedom():
    src = seeded_source(1, "wishart-psd")
    for k in (6, 7, 50):
        for _ in range(300):
            assert np.linalg.eigvalsh(wishart(src, 6, 2.0, k))[0] > 0


def test_wishart_regularizers_always_psd_at_paper_settings():
    # d = 10 (Dubey & Pentland Fig. 1A), eps = 1, delta = 0.1, T = 1000 releases
    params = privacy_params("wishart", epsilon=1.0, delta=0.1, dims=10, releases=1000)
    eigs = _min_eig_of_releases(params, seed=2, trees=4, steps=60)
    assert np.all(eigs > 0)
    assert params.wishart_k > 10_000  # the paper's k, not a toy one


def test_shifted_gaussian_regularizers_psd_in_99_percent_at_paper_settings():
    params = privacy_params("gaussian", epsilon=1.0, delta=0.1, dims=10, releases=1000)
    eigs = _min_eig_of_releases(params, seed=3, trees=8, steps=60)
    assert np.mean(eigs > 0) >= 0.99
    # and the shift is what does it: without it about half the draws would be indefinite
    unshifted = eigs - params.shift
    assert np.mean(unshifted > 0) < 0.5


def test_shifted_wishart_regularizers_psd_at_paper_settings():
    params = privacy_params("shifted-wishart", epsilon=1.0, delta=0.1, dims=10, releases=1000)
    eigs = _min_eig_of_releases(params, seed=4, trees=4, steps=60)
    assert np.all(eigs > 0)
    # the shift is large: unshifted, the smallest eigenvalue would be ~25x rho_min'
    assert -params.shift > 20 * params.rho_min


@pytest.mark.parametrize("noise", ["wishart", "shifted-wishart"])
@pytest.mark.parametrize("eps", [1.0, 100.0])
def test_wishart_releases_stay_inside_their_accuracy_bounds(noise, eps):
    # d = 5, the authors' experiment; every release, including prefixes of one tree node
    params = privacy_params(noise, epsilon=eps, delta=0.1, dims=5, releases=256)
    eigs = _eig_range_of_releases(params, seed=5, trees=3, steps=100)
    assert np.all(eigs[:, 0] >= params.rho_min) and np.all(eigs[:, 1] <= params.rho_max)


def test_a_one_node_prefix_would_fall_below_the_wishart_rho_min():
    # why releases are padded to m draws: unpadded, t = 1 (one node) misses the bound
    params = privacy_params("wishart", epsilon=1.0, delta=0.1, dims=5, releases=256)
    src = seeded_source(6, "pad-test")
    tree = TreeMechanism(6, 256, params.node_noise(lambda label: src))
    one_node = tree.insert(np.zeros((6, 6)))[:5, :5]
    assert np.linalg.eigvalsh(one_node)[-1] < params.rho_min
