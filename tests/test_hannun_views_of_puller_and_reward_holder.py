"""p' may learn a_t and nothing else; p'' may learn nothing (Hannun et al. §3-4). Check what
they actually receive in a run."""

import numpy as np

from hannun_inproc import run_hannun
from mpcbandit.mpc.ring import RING_DTYPE
from mpcbandit.protocols.hannun import ONLINE


def _bodies(msg):
    """Unwrap the merged-op nesting down to the op body."""
    while isinstance(msg, list):
        assert len(msg) == 1
        msg = msg[0]
    return msg


def test_puller_receives_only_shares_of_the_chosen_one_hot_and_reward_holder_nothing():
    steps, arms = 30, 6
    cfg, results, seen, chans = run_hannun(
        [f"hannun.iterations={steps}", f"hannun.arms={arms}", "hannun.dims=6", "hannun.epsilon=0.3"],
        record=("arm_puller.0", "reward_holder.0"))
    chosen = results["arm_puller.0"]["arms"]
    # p'': not a single message, not a byte
    assert seen["reward_holder.0"] == []
    assert chans["reward_holder.0"].stats.total().bytes_received == 0
    # p': per step one message from each feature holder, under the online label, nothing else
    got = seen["arm_puller.0"]
    assert len(got) == 2 * steps
    assert {label for label, _, _ in got} == {ONLINE}
    assert sorted({peer for _, peer, _ in got}) == ["feature_holder.0", "feature_holder.1"]
    single = []
    for t in range(steps):
        step = {peer: _bodies(body) for _, peer, body in got[2 * t:2 * t + 2]}
        assert set(step) == {"feature_holder.0", "feature_holder.1"}
        parts = [np.asarray(b["v"]).view(RING_DTYPE) for b in step.values()]
        assert all(p.shape == (arms,) for p in parts) and {b["f"] for b in step.values()} == {0}
        total = parts[0] + parts[1]
        np.testing.assert_array_equal(total, np.eye(arms, dtype=np.uint64)[chosen[t]])  # a_t only
        single.append(parts[0])
    # one holder's share alone looks uniform: no entry in {0, 1}, high bits balanced
    single = np.concatenate(single)
    assert not np.isin(single, [0, 1]).any()
    assert 0.3 < np.mean(single >> np.uint64(63)) < 0.7
    # the feature holders never hear from p' anything but o_t, and p' sends nothing else
    assert chans["arm_puller.0"].stats.total().messages == 2 * steps
