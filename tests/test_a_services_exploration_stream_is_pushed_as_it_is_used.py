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


def test_the_served_stream_is_each_keys_stream_from_any_start_and_bounded_ahead():
    s = HannunSection(arms=4, dims=6, epsilon=0.3)
    k0, k1 = os.urandom(32), os.urandom(32)
    schedule, start, sizes = [(0, k0), (300, k1)], 250, [1, 7, 42, 300, 3, 47]  # to 650
    end = start + sum(sizes)

    def dealer(chan):
        pusher = ExplorationPusher(chan, HOLDERS, s, KeySchedule(schedule), start)
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
    assert out[HOLDERS[0]][0] == out[HOLDERS[1]][0] == end
    y, yv, g = (out[HOLDERS[0]][1][k] + out[HOLDERS[1]][1][k] for k in range(3))
    first = Prg(k0)
    draw_exploration(first, start, s.arms, s.epsilon, s.precision_bits)   # before the start
    parts = [draw_exploration(first, 300 - start, s.arms, s.epsilon, s.precision_bits),
             draw_exploration(Prg(k1), end - 300, s.arms, s.epsilon, s.precision_bits)]
    explore = np.concatenate([p.explore for p in parts])
    uniform = np.concatenate([p.uniform for p in parts])
    assert np.array_equal(y.view(np.int64), explore)
    assert np.array_equal(yv.view(np.int64), (uniform << s.precision_bits) * explore[:, None])
    assert np.array_equal(g.view(np.int64), np.concatenate([p.perm for p in parts]))
    assert explore.sum() > 0
    assert out[DEALER] <= (AHEAD + 1) * BLOCK
