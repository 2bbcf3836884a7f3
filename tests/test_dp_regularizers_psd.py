"""Wishart regularizers are always PSD; shifted Gaussian ones are PSD w.h.p. at paper settings."""

import numpy as np

from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source, wishart
from mpcbandit.dp.privatizer import Privatizer


def _min_eig_of_releases(params, seed: int, trees: int, steps: int) -> np.ndarray:
    src = seeded_source(seed, "psd-test")
    eigs = []
    for _ in range(trees):
        priv = Privatizer(params, src)
        eigs.append(np.linalg.eigvalsh(priv.initial()[0])[0])
        for _ in range(steps):
            gram, _ = priv.privatize(np.zeros((params.dims + 1, params.dims + 1)))
            eigs.append(np.linalg.eigvalsh(gram)[0])
    return np.array(eigs)


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
