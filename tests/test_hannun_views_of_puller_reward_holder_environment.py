"""Algorithm 1's promise (Hannun et al. §3-4): p' learns a_t and nothing else, p'' learns the
reward r_t of the pulled arm and nothing else, and the environment (the world the arm is
pulled in) learns a_t and delivers r_t to p'' alone. Check what each receives in a run."""

import numpy as np

from hannun_inproc import run_hannun
from mpcbandit.mpc.ring import RING_DTYPE
from mpcbandit.protocols.hannun.protocol import DELIVER, ONLINE, PULL
from mpcbandit.protocols.hannun.reference import task

STEPS, ARMS = 30, 6


def _bodies(msg):
    """Unwrap the merged-op nesting down to the op body."""
    while isinstance(msg, list):
        assert len(msg) == 1
        msg = msg[0]
    return msg


def _run():
    return run_hannun([f"hannun.iterations={STEPS}", f"hannun.arms={ARMS}", "hannun.dims=6",
                       "hannun.epsilon=0.3"],
                      record=("arm_puller.0", "reward_holder.0", "environment.0"))


def test_puller_receives_only_shares_of_the_chosen_one_hot():
    _, results, seen, chans = _run()
    chosen = results["arm_puller.0"]["arms"]
    got = seen["arm_puller.0"]
    assert len(got) == 2 * STEPS   # per step one message from each feature holder, nothing else
    assert {label for label, _, _ in got} == {ONLINE}
    assert sorted({peer for _, peer, _ in got}) == ["feature_holder.0", "feature_holder.1"]
    single = []
    for t in range(STEPS):
        step = {peer: _bodies(body) for _, peer, body in got[2 * t:2 * t + 2]}
        assert set(step) == {"feature_holder.0", "feature_holder.1"}
        parts = [np.asarray(b["v"]).view(RING_DTYPE) for b in step.values()]
        assert all(p.shape == (ARMS,) for p in parts) and {b["f"] for b in step.values()} == {0}
        total = parts[0] + parts[1]
        np.testing.assert_array_equal(total, np.eye(ARMS, dtype=np.uint64)[chosen[t]])  # a_t only
        single.append(parts[0])
    # one holder's share alone looks uniform: no entry in {0, 1}, high bits balanced
    single = np.concatenate(single)
    assert not np.isin(single, [0, 1]).any()
    assert 0.3 < np.mean(single >> np.uint64(63)) < 0.7
    # p' sends o_t to each feature holder and a_t to the environment, nothing else
    assert chans["arm_puller.0"].stats.total().messages == 3 * STEPS


def test_environment_learns_only_the_pulled_arm_and_reward_holder_only_its_reward():
    cfg, results, seen, chans = _run()
    chosen = results["arm_puller.0"]["arms"]
    rewards = task(cfg).rewards
    # the environment: a_t from p', one message a step, nothing from the computing parties
    assert [(label, peer) for label, peer, _ in seen["environment.0"]] == [(PULL, "arm_puller.0")] * STEPS
    assert [body for _, _, body in seen["environment.0"]] == chosen
    # p'': r_t = the pulled arm's reward, from the environment alone; never a counterfactual one
    got = seen["reward_holder.0"]
    assert [(label, peer) for label, peer, _ in got] == [(DELIVER, "environment.0")] * STEPS
    assert [body for _, _, body in got] == [rewards[t, a] for t, a in enumerate(chosen)]
    # per step p'' sends one share of r_t to each feature holder: one scalar each
    assert chans["reward_holder.0"].stats.total().messages == 2 * STEPS
    assert results["environment.0"]["delivered"] == [body for _, _, body in got]
    # the environment tells nobody but p''
    assert chans["environment.0"].stats.total().messages == STEPS
