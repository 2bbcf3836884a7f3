"""The checkpoint state of the DP building blocks (Prg, tree/privatizer, environment,
FedUCB estimators) goes through the checkpoint codec and continues exactly where it stopped."""

import numpy as np
import pytest

from mpcbandit.bandits.feducb import FedEstimators
from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import NormalSource, seeded_source
from mpcbandit.dp.privatizer import Privatizer, augmented_gram
from mpcbandit.dp.tree import TreeMechanism
from mpcbandit.mpc.prg import Prg
from mpcbandit.net.codec import pack_value, unpack_value

PARAMS = privacy_params("gaussian", epsilon=1.0, delta=0.1, dims=3, releases=40, alpha=0.1,
                        lam=1.0, delta_log_c=4.0)


def through_file(state):
    return unpack_value(pack_value(state, "test"), "test")


@pytest.mark.parametrize("position", [0, 1, 15, 16, 17, 4095, 100_003])
def test_prg_at_continues_the_keystream(position):
    seed = bytes(range(32))
    whole = Prg(seed)
    whole.bytes(position)
    resumed = Prg.at(seed, position)
    assert resumed.position == whole.position == position
    assert resumed.bytes(100) == whole.bytes(100)


def items(n, seed=3):
    rng = np.random.default_rng(seed)
    return [augmented_gram(rng.standard_normal(3), rng.integers(2)) for _ in range(n)]


def test_privatizer_resumed_with_seeded_noise_releases_the_uninterrupted_sums():
    qs = items(30)
    whole = Privatizer(PARAMS, seeded_source(1, "p"))
    first = Privatizer(PARAMS, seeded_source(1, "p"))
    expected = [whole.initial()] + [whole.privatize(q) for q in qs]
    got = [first.initial()] + [first.privatize(q) for q in qs[:13]]
    again = Privatizer(PARAMS, seeded_source(1, "p"))
    again.load_state(through_file(first.state()))
    got += [again.privatize(q) for q in qs[13:]]
    for (g, v), (eg, ev) in zip(got, expected, strict=True):
        assert np.array_equal(g, eg) and np.array_equal(v, ev)
    assert again.tree.count == 30


def test_an_unseeded_privatizer_resumed_spends_its_noise_once_per_statistic():
    """Its noise key travels in the state: the same item re-inserted after a resume is released
    as before; another item gets other noise (not the same noise over a different sum)."""
    first = Privatizer(PARAMS, NormalSource())
    for q in items(5):
        first.privatize(q)
    blob = pack_value(first.state(), "test")
    q, other = items(2, seed=9)
    released = first.privatize(q)
    a, b = Privatizer(PARAMS, NormalSource()), Privatizer(PARAMS, NormalSource())
    for p in (a, b):
        p.load_state(unpack_value(blob, "test"))
    again, changed = a.privatize(q), b.privatize(other)
    assert all(np.array_equal(x, y) for x, y in zip(again, released))
    moved = other - q
    assert not np.allclose(changed[1] - released[1], moved[:-1, -1], atol=1e-6)


def test_a_privatizer_state_without_its_noise_key_is_refused():
    state = Privatizer(PARAMS, NormalSource()).state()
    del state["noise_key"]  # what a checkpoint written before keyed noise holds
    with pytest.raises(ValueError, match="before its noise was keyed"):
        Privatizer(PARAMS, NormalSource()).load_state(state)


def test_environment_and_estimators_continue_from_their_state():
    whole, part = (GapEnvironment(4, 3, 5, "agent0") for _ in range(2))
    ew, ep = (FedEstimators(2, 3, PARAMS, 2) for _ in range(2))
    for env, est, n in ((whole, ew, 9), (part, ep, 4)):
        for _ in range(n):
            ctx, _ = env.action_set()
            est.observe(np.array([1]), ctx[:1], np.array([env.reward(0.5)]))
    env2, est2 = GapEnvironment(4, 3, 5, "agent0"), FedEstimators(2, 3, PARAMS, 2)
    env2.load_state(through_file(part.state()))
    est2.load_state(through_file(ep.state()))
    for _ in range(5):
        ctx, _ = env2.action_set()
        est2.observe(np.array([1]), ctx[:1], np.array([env2.reward(0.5)]))
    for k, v in ew.state().items():
        assert np.array_equal(v, est2.state()[k]), k
    assert np.array_equal(whole.action_set()[0], env2.action_set()[0])


def test_a_tree_state_from_before_padding_resumes_unpadded_and_is_refused_padded():
    def ones(label=b""):
        return np.ones((3, 3))
    old = TreeMechanism(3, 8, ones)
    old.insert(np.zeros((3, 3)))
    state = old.state()
    del state["padding"]  # what a checkpoint written before padded releases holds
    plain = TreeMechanism(3, 8, ones)
    plain.load_state(state)
    np.testing.assert_array_equal(plain.release(), old.release())
    padded = TreeMechanism(3, 8, ones, pad_noise=lambda n, label: n * ones())
    with pytest.raises(ValueError, match="before Wishart releases were padded"):
        padded.load_state(state)
