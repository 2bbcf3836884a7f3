import numpy as np
import pytest

from mpcbandit.dp.tree import TreeMechanism, tree_depth


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 100, 1000])
def test_every_prefix_uses_at_most_m_nodes_and_sums_exactly_without_noise(n):
    d = 3
    tree = TreeMechanism(d, n, lambda label: np.zeros((d, d)))
    rng = np.random.default_rng(n)
    total = np.zeros((d, d))
    worst = 0
    for _ in range(n):
        item = rng.standard_normal((d, d))
        total += item
        released = tree.insert(item)
        np.testing.assert_allclose(released, total, atol=1e-9)
        assert 1 <= tree.nodes_used <= tree_depth(n)
        worst = max(worst, tree.nodes_used)
    assert tree.depth == 1 + int(np.ceil(np.log2(n)))
    # the busiest prefix is t = 2^k - 1 <= n: floor(log2(n + 1)) nodes, one per set bit
    assert worst == int(np.floor(np.log2(n + 1)))


def test_insert_beyond_budget_is_refused():
    tree = TreeMechanism(2, 4, lambda label: np.zeros((2, 2)))
    for _ in range(4):
        tree.insert(np.eye(2))
    with pytest.raises(ValueError, match="4 inserts"):
        tree.insert(np.eye(2))


def test_each_node_noise_is_drawn_once_and_reused():
    draws = []

    def noise(label):
        draws.append(label)
        return np.full((2, 2), float(len(draws)))

    tree = TreeMechanism(2, 8, noise)
    tree.insert(np.zeros((2, 2)))        # node [1]: noise 1
    r2 = tree.insert(np.zeros((2, 2)))   # node [1,2]: noise 2
    r3 = tree.insert(np.zeros((2, 2)))   # [1,2] + [3]: noise 2 + 3
    assert len(draws) == 3
    assert r2[0, 0] == 2.0 and r3[0, 0] == 5.0
