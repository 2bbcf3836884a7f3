"""Hannun's bandit served in batches (mpcbandit/protocols/hannun/ops.py), every party a thread:
batched decisions and delayed, shuffled or missing rewards pick the arms of the float64 replay
of the same log (hannun.serve_reference), at one decision's rounds per batch of decisions."""

import math

import numpy as np
import pytest
from hannun_serve_inproc import PULLER, random_log, run_serve_log, section

from mpcbandit.protocols.hannun.serve_reference import (
    ServeReference,
    chunks,
    newton_schulz_schedule,
    replay_log,
)

KEY = bytes(range(32))   # the dealer's exploration key: the replay draws the same stream


def _log_has_every_kind_of_feedback(log):
    """The log holds batches of several decisions and of several rewards, rewards that come
    batches late, out of decision order, and decisions never rewarded."""
    decided = {i: n for n, (kind, ids, _) in enumerate(log) if kind == "decide" for i in ids}
    rewards = [(n, ids) for n, (kind, ids, _) in enumerate(log) if kind == "reward"]
    rewarded = [i for _, ids in rewards for i in ids]
    assert max(len(ids) for _, ids, _ in log) > 1
    assert max(len(ids) for _, ids in rewards) > 1
    assert any(n - decided[i] > 3 for n, ids in rewards for i in ids)          # late
    assert any(int(a[1:]) > int(b[1:]) for _, ids in rewards for a, b in zip(ids, ids[1:]))
    assert len(set(rewarded)) == len(rewarded) < len(decided)                 # some never


@pytest.mark.parametrize("holders,arms,dims,decisions", [(2, 10, 20, 300), (3, 4, 6, 60)],
                         ids=["two holders A=10 D=20", "three holders"])
def test_batched_decisions_with_late_shuffled_and_missing_rewards_pick_the_replays_arms(
        holders, arms, dims, decisions):
    rng = np.random.default_rng(holders)
    ref = ServeReference(arms, dims, 0.1, 20, KEY)
    log, want = random_log(rng, ref, decisions, max_batch=16)
    _log_has_every_kind_of_feedback(log)
    # no fixed-point near-tie decides the outcome: the scores' errors measured ~1e-5
    # (docs/serve-internals.md)
    assert min(ref.gaps) >= 2.0 ** -14
    out = run_serve_log(log, section(log, arms=arms, dims=dims, feature_holders=holders), KEY)
    assert out[PULLER] == want
    assert replay_log(log, ServeReference(arms, dims, 0.1, 20, KEY)) == want   # replay = live


def test_a_batch_of_decisions_takes_one_decisions_rounds_and_a_batch_of_rewards_a_fixed_count():
    A, D = 10, 20
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (300, D)) / math.sqrt(D) / 2
    ids = [f"d{k}" for k in range(300)]
    log = [("decide", ids[:1], x[:1]), ("decide", ids[1:17], x[1:17]),
           ("decide", ids[17:300], x[17:300]), ("reward", ids[:1], np.ones(1)),
           ("reward", ids[1:17], np.zeros(16)), ("reward", ids[17:], np.ones(283))]
    out = run_serve_log(log, section(log, arms=A, dims=D), KEY)
    rounds = [e["rounds"] for e in out["feature_holder.0"]]
    # share the contexts 1, u and (1 - y) b 1, the score 1, the argmax 7 + ceil(log2 9), open 1
    assert rounds[:3] == [15, 15, 15]
    # the one-hots, rewards and x x^T 1; the sums 1; W's truncation (and b's sum) 1; then each
    # Newton-Schulz step 4: two products, each truncated once; 283 rewards are 2 refreshes
    steps = [sum(len(newton_schulz_schedule(p.stop - p.start, 20)) for p in chunks(R))
             for R in (1, 16, 283)]
    assert rounds[3:] == [3 + 4 * k for k in steps] == [19, 27, 3 + 4 * (8 + 6)]
    assert out[PULLER] == replay_log(log, ServeReference(A, D, 0.1, 20, KEY))
