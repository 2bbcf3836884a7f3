"""Released minus true sums: mean = the shift, per-entry variance = nodes x the node variance.

Gaussian releases use the prefix's popcount(t) nodes; Wishart releases (plain and shifted) are
padded to exactly m = 4 draws, so their mean is (m k L~^2 - c) I and their variance m times a node's.

Fixed-seed statistical checks: N replicate trees give, per (t, entry class), a sample variance
whose ratio to the configured one has standard error about sqrt(2/N) = 0.035 at N = 1600 (pooled
over entries, smaller); the acceptance band +-0.12 is > 3.4 standard errors.
"""

import numpy as np
import pytest

from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source
from mpcbandit.dp.tree import TreeMechanism

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

N, STEPS = 1600, 7  # prefixes 1..7 use 1, 1, 2, 1, 2, 2, 3 nodes


def _noise_of_releases(params, seed: int) -> tuple[np.ndarray, list[int]]:
    dim = params.dims + 1
    src = seeded_source(seed, "variance-test")
    out = np.zeros((N, STEPS, dim, dim))
    nodes = []
    rng = np.random.default_rng(seed)
    for r in range(N):
        stream = lambda label: src  # noqa: E731 - every draw from one stream, as before
        tree = TreeMechanism(dim, 8, params.node_noise(stream), shift=params.shift,
                             pad_noise=params.pad_noise(stream))
        total = np.zeros((dim, dim))
        nodes = []
        for t in range(STEPS):
            a = rng.uniform(-1, 1, dim) / np.sqrt(dim)
            item = np.outer(a, a)
            total += item
            out[r, t] = tree.insert(item) - total
            nodes.append(tree.nodes_used)
    return out, nodes


@pytest.mark.parametrize("noise,eps,want_nodes", [
    ("gaussian", 1.0, [1, 1, 2, 1, 2, 2, 3]),
    ("wishart", 40.0, [4] * 7),
    ("shifted-wishart", 40.0, [4] * 7),
])
def test_release_noise_mean_and_per_entry_variance(noise, eps, want_nodes):
    params = privacy_params(noise, epsilon=eps, delta=0.1, dims=3, releases=8)
    noise_draws, nodes = _noise_of_releases(params, seed=11)
    assert nodes == want_nodes
    dim = params.dims + 1
    off = ~np.eye(dim, dtype=bool)
    for t, k in enumerate(nodes):
        want_var = params.entry_variance(k)
        var = noise_draws[:, t].var(axis=0, ddof=1)
        mean = noise_draws[:, t].mean(axis=0)
        ratio_off = var[off].mean() / want_var[off].mean()
        ratio_diag = np.diag(var).mean() / np.diag(want_var).mean()
        assert abs(ratio_off - 1) < 0.12, (t, ratio_off)
        assert abs(ratio_diag - 1) < 0.12, (t, ratio_diag)
        want_mean = params.shift * np.eye(dim)
        if noise != "gaussian":
            want_mean = want_mean + k * params.wishart_k * params.l_tilde2 * np.eye(dim)
        se = np.sqrt(want_var / N)
        assert np.all(np.abs(mean - want_mean) < 5 * se), t


def test_wrong_variance_would_be_detected():
    params = privacy_params("gaussian", epsilon=1.0, delta=0.1, dims=3, releases=8)
    noise_draws, nodes = _noise_of_releases(params, seed=12)
    var = noise_draws[:, 6].var(axis=0, ddof=1)
    off = ~np.eye(params.dims + 1, dtype=bool)
    # 3 nodes were used; claiming 2 (or 4) is rejected by the same band
    for wrong in (2, 4):
        assert abs(var[off].mean() / params.entry_variance(wrong)[off].mean() - 1) > 0.12
