"""The Hannun dealer's exploration stream: y_t ~ Bernoulli(eps), y_t v_t (v_t uniform at 2L
fractional bits) and the tie-break permutation gamma_t of every step, drawn from one key and
pushed to the feature holders as additive shares, BLOCK steps per message, ahead of use
(offline: the label EXPLORE keeps it out of the online rounds).

Each block is shared by seeds: holders 0..n-2 get a fresh 32-byte seed, the last one the
corrections, so one ring element per value leaves the dealer.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from mpcbandit.bandits.egreedy import draw_exploration
from mpcbandit.bodies import expect_field
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc import opening
from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.ring import RING_DTYPE as U64
from mpcbandit.mpc.rounds import IN_OP
from mpcbandit.mpc.shares import AShare

__all__ = ["EXPLORE", "BLOCK", "first_block", "exploration", "push_exploration", "ExplorationShares"]

EXPLORE = "explore"     # the label of the stream's messages
BLOCK = 256             # steps of exploration material per dealer message

def _split_by_seeds(arrays: list[np.ndarray], n: int) -> list[dict]:
    """Additive shares of arrays for n parties: parties 0..n-2 get a fresh 32-byte seed each,
    the last one the corrections (one ring element per value leaves the dealer)."""
    seeds = [os.urandom(32) for _ in range(n - 1)]
    prgs = [Prg(sd) for sd in seeds]
    last = []
    for a in arrays:
        c = np.asarray(a, dtype=np.int64).view(U64).copy()
        for prg in prgs:
            c -= prg.ring(c.shape)
        last.append(c)
    return [{"seed": sd} for sd in seeds] + [{"corr": last}]


def _expand_share(msg: dict, shapes: list[tuple], peer: str) -> list[np.ndarray]:
    """One holder's shares of a block: from its seed, or the last holder's corrections."""
    if isinstance(msg, dict) and "corr" in msg:
        corr = expect_field(msg, "corr", list, peer, IN_OP)
        if len(corr) != len(shapes):
            raise ProtocolError(peer, IN_OP, f"{len(corr)} exploration arrays, expected {len(shapes)}")
        return [opening.peer_ring(c, sh, peer) for c, sh in zip(corr, shapes)]
    prg = Prg(opening.peer_seed(msg, peer))
    return [prg.ring(sh) for sh in shapes]


def first_block(resumed: int) -> int:
    """The first step whose exploration block (or rewards block) is still to be sent when a
    run resumes after `resumed` steps: the feature holders keep the block they are in."""
    return -(-resumed // BLOCK) * BLOCK


def exploration(cfg, key: bytes):
    """The exploration samples of all T steps drawn from key (what the dealer draws in blocks)."""
    s = cfg.section
    return draw_exploration(Prg(key), s.iterations, s.arms, s.epsilon, s.precision_bits)


def push_exploration(chan, holders: list[str], key: bytes, s: Any, start: int = 0) -> None:
    """Draw the stream of key for s.iterations steps and send each holder its shares, block
    by block; a resumed run (start > 0) skips the blocks the holders already have."""
    prg = Prg(key)
    L = s.precision_bits
    for block_start in range(0, s.iterations, BLOCK):
        smp = draw_exploration(prg, min(BLOCK, s.iterations - block_start), s.arms, s.epsilon, L)
        if block_start < first_block(start):
            continue  # drawn again only to bring the stream to where the run resumes
        yv = (smp.uniform << L) * smp.explore[:, None]     # Alg. 1 lines 8, 12, 13: y v at 2L bits
        for p, part in zip(holders, _split_by_seeds([smp.explore, yv, smp.perm], len(holders))):
            chan.send(EXPLORE, p, part)


class ExplorationShares:
    """A feature holder's shares of the dealer's exploration stream, step by step."""

    def __init__(self, chan, dealer: str, s: Any, lead: bool, state: dict | None = None):
        self.chan, self.dealer, self.s, self.lead = chan, dealer, s, lead
        self.block: list[np.ndarray] = state["block"] if state else []
        self.pos = state["pos"] if state else BLOCK

    def state(self) -> dict:
        """The block in use and the position in it (checkpoint state)."""
        return {"block": self.block, "pos": self.pos}

    def next(self, t: int) -> tuple[AShare, AShare, AShare]:
        """([y_t] integer, [y_t v_t] at 2L bits, [gamma_t] integers 1..A)."""
        s = self.s
        if self.pos == BLOCK:
            steps = min(BLOCK, s.iterations - t)
            msg = self.chan.recv(EXPLORE, self.dealer)
            try:
                self.block = _expand_share(msg, [(steps,), (steps, s.arms), (steps, s.arms)],
                                           self.dealer)
            except ProtocolError as e:
                raise ProtocolError(e.peer, f"{EXPLORE} step {t}", e.reason) from None
            self.pos = 0
        y, yv, g = (b[self.pos] for b in self.block)
        self.pos += 1
        return (AShare(y, 0, self.lead), AShare(yv, 2 * s.precision_bits, self.lead),
                AShare(g, 0, self.lead))
