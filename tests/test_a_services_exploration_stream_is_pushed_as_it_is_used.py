"""A service's exploration stream has no end: the dealer pushes blocks as the lead holder
opens them (never more than AHEAD blocks beyond), from any decision a resumed service starts
at, each block within one key's segment; the holders' shares add up to the stream of each key
from the decision it starts at (what serve-replay draws)."""

import os

import numpy as np

from mpcbandit.bandits.egreedy import draw_exploration
from mpcbandit.mpc.prg import Prg
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols.hannun.protocol import HannunSection
from mpcbandit.protocols.hannun.stream import (AHEAD, BLOCK, ExplorationPusher, KeySchedule,
                                               ServedExploration)

HOLDERS = ["feature_holder.0", "feature_holder.1"]
DEALER = "dealer.0"


def _served(s, keys: KeySchedule, start: int, sizes: list[int]):
    """The holders' shares of the stream the dealer pushes from decision start, taken in
    batches of sizes, added up: (y, y v, gamma), and the most the dealer pushed ahead."""
    def dealer(chan):
        pusher = ExplorationPusher(chan, HOLDERS, s, keys, start)
        most_ahead = 0
        while True:
            _, msg = chan.receive_any("dealer", HOLDERS[:1])
            if "done" in msg:
                return most_ahead
            pusher.acked(msg["explore_at"])
            most_ahead = max(most_ahead, pusher.pushed - msg["explore_at"])

    def holder(i):
        def run(chan):
            lead = i == 0
            ack = (lambda t: chan.send("dealer", DEALER, {"explore_at": t})) if lead else None
            stream = ServedExploration(chan, DEALER, s, lead, start, ack)
            taken = [stream.take(n) for n in sizes]
            if lead:
                chan.send("dealer", DEALER, {"done": True})
            return stream.t, [np.concatenate([t[k].v for t in taken]) for k in range(3)]
        return run

    out, _ = run_inproc({DEALER: dealer, **{h: holder(i) for i, h in enumerate(HOLDERS)}},
                        peers={DEALER: HOLDERS, HOLDERS[0]: [DEALER, HOLDERS[1]],
                               HOLDERS[1]: [DEALER, HOLDERS[0]]})
    assert out[HOLDERS[0]][0] == out[HOLDERS[1]][0] == start + sum(sizes)
    y, yv, g = (out[HOLDERS[0]][1][k] + out[HOLDERS[1]][1][k] for k in range(3))
    return y.view(np.int64), yv.view(np.int64), g.view(np.int64), out[DEALER]


def _expected(s, segments: list[tuple[int, int, bytes]], start: int, end: int):
    """Each segment's (first, end, key) stream from its first decision, over start..end."""
    parts = []
    for first, stop, key in segments:
        lo, hi = max(start, first), min(end, stop)
        if lo < hi:
            prg = Prg(key)
            draw_exploration(prg, lo - first, s.arms, s.epsilon, s.precision_bits)  # before lo
            parts.append(draw_exploration(prg, hi - lo, s.arms, s.epsilon, s.precision_bits))
    return [np.concatenate([getattr(p, f) for p in parts]) for f in ("explore", "uniform", "perm")]


def test_the_served_stream_is_each_keys_stream_from_any_start_and_bounded_ahead():
    s = HannunSection(arms=4, dims=6, epsilon=0.3)
    k0, k1 = os.urandom(32), os.urandom(32)
    start, sizes = 250, [1, 7, 42, 300, 3, 47]   # to 650
    y, yv, g, ahead = _served(s, KeySchedule([(0, k0), (300, k1)]), start, sizes)
    explore, uniform, perm = _expected(s, [(0, 300, k0), (300, 650, k1)], start, 650)
    assert np.array_equal(y, explore)
    assert np.array_equal(yv, (uniform << s.precision_bits) * explore[:, None])
    assert np.array_equal(g, perm)
    assert explore.sum() > 0
    assert ahead <= (AHEAD + 1) * BLOCK


def test_a_key_every_n_decisions_ends_its_segment_at_each_multiple_drawn_when_first_needed():
    """hannun.reveal = "every": segments of N decisions, each from a key drawn (and kept by the
    dealer) only when its first block is pushed; no block spans two."""
    s = HannunSection(arms=4, dims=6, epsilon=0.3)
    keys, drawn = {0: os.urandom(32)}, []

    def fresh(first):
        drawn.append(first)
        return keys.setdefault(first, os.urandom(32))

    schedule = KeySchedule([(0, keys[0])], every=300, fresh=fresh)
    assert schedule.segment(299) == (0, 300, keys[0]) and drawn == []
    start, sizes = 250, [1, 7, 42, 300, 3, 47]   # to 650
    y, yv, g, _ = _served(s, schedule, start, sizes)
    # one key a segment, in order, as far as the dealer pushed ahead (AHEAD blocks)
    assert drawn == list(range(300, drawn[-1] + 1, 300)) and drawn[-1] >= 600
    explore, uniform, perm = _expected(s, [(0, 300, keys[0]), (300, 600, keys[300]),
                                           (600, 900, keys[600])], start, 650)
    assert np.array_equal(y, explore) and np.array_equal(g, perm)
    assert np.array_equal(yv, (uniform << s.precision_bits) * explore[:, None])
