"""The Hannun dealer's exploration stream: y_t ~ Bernoulli(eps), y_t v_t (v_t uniform at 2L
fractional bits) and the tie-break permutation gamma_t of every step, drawn from one key and
pushed to the feature holders as additive shares, BLOCK steps per message, ahead of use
(offline: the label EXPLORE keeps it out of the online rounds).

Each block is shared by seeds: holders 0..n-2 get a fresh 32-byte seed, the last one the
corrections, so one ring element per value leaves the dealer.
"""

from __future__ import annotations

import bisect
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

__all__ = ["EXPLORE", "BLOCK", "AHEAD", "first_block", "exploration", "push_exploration",
           "ExplorationShares", "KeySchedule", "ExplorationPusher", "ServedExploration"]

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


# ---------------------------------------------------------------- the served stream


#: blocks the dealer of a service keeps pushed ahead of the block the holders are using
AHEAD = 4


def _advance(prg: Prg, items: int, s: Any) -> None:
    """Draw and drop items of the stream (bounded memory): the stream is the same in chunks."""
    while items > 0:
        step = min(items, 16 * BLOCK)
        draw_exploration(prg, step, s.arms, s.epsilon, s.precision_bits)
        items -= step


class KeySchedule:
    """The keys of a service's stream: segments (first decision, key), ascending, each drawn
    from its own key. The last one has no end, unless ``every`` > 0: then a segment also ends
    at each multiple of every, and the key of the next is drawn by ``fresh(first)`` (which
    keeps it) when a block first needs it."""

    def __init__(self, keys: list[tuple[int, bytes]], every: int = 0, fresh=None):
        self.keys, self.every, self.fresh = sorted(keys), every, fresh

    def segment(self, t: int) -> tuple[int, int | None, bytes]:
        """Decision t's segment: its first decision, its end (None: open) and its key."""
        i = max(k for k, (first, _) in enumerate(self.keys) if first <= t)
        if self.every and self.keys[i][0] < t - t % self.every:   # a new multiple of every
            bisect.insort(self.keys, (t - t % self.every, self.fresh(t - t % self.every)))
            i += 1
        first, key = self.keys[i]
        ends = [self.keys[i + 1][0]] if i + 1 < len(self.keys) else []
        if self.every:
            ends.append(first - first % self.every + self.every)
        return first, min(ends, default=None), key


class ExplorationPusher:
    """The dealer's side of a service's exploration stream: unbounded, pushed as it is used.

    The stream is cut into the segments of ``keys`` (a KeySchedule: a service draws a fresh
    key after each key it reveals, so that what comes after a reveal stays secret). Blocks of
    at most BLOCK decisions, each within one segment, go to every feature holder, starting at
    decision ``start``; the lead holder says which block it opens (``acked``) and the pusher
    keeps AHEAD blocks beyond it.
    """

    def __init__(self, chan, holders: list[str], s: Any, keys: KeySchedule, start: int):
        self.chan, self.holders, self.s, self.keys = chan, holders, s, keys
        self.pushed = start          # the first decision not pushed yet
        self._first = -1             # the first decision of the segment being drawn
        self._prg: Prg | None = None
        self.acked(start)

    def acked(self, t: int) -> None:
        """The holders opened the block that starts at decision t: keep AHEAD blocks beyond."""
        while self.pushed < t + AHEAD * BLOCK:
            self._push_block()

    def _push_block(self) -> None:
        t, s = self.pushed, self.s
        first, end, key = self.keys.segment(t)
        if first != self._first:   # a segment begins, or a resumed service joins one midway
            self._first, self._prg = first, Prg(key)
            _advance(self._prg, t - first, s)
        count = min(BLOCK, (t + BLOCK if end is None else end) - t)
        smp = draw_exploration(self._prg, count, s.arms, s.epsilon, s.precision_bits)
        yv = (smp.uniform << s.precision_bits) * smp.explore[:, None]
        for p, part in zip(self.holders, _split_by_seeds([smp.explore, yv, smp.perm],
                                                          len(self.holders))):
            self.chan.send(EXPLORE, p, {"t": t, "n": count, **part})
        self.pushed = t + count


class ServedExploration:
    """A feature holder's shares of a service's exploration stream (ExplorationPusher), taken
    a batch of decisions at a time from decision ``start`` on. The lead holder tells the
    dealer (``ack(t)``, a message of its own) each block it opens."""

    def __init__(self, chan, dealer: str, s: Any, lead: bool, start: int, ack=None):
        self.chan, self.dealer, self.s, self.lead, self.ack = chan, dealer, s, lead, ack
        self.t = start               # the next decision's place in the stream
        self.block: list[np.ndarray] = []
        self.pos = 0

    def _open_block(self) -> None:
        msg = self.chan.recv(EXPLORE, self.dealer)
        tag = f"{EXPLORE} decision {self.t}"
        first = expect_field(msg, "t", int, self.dealer, tag)
        count = expect_field(msg, "n", int, self.dealer, tag)
        if first != self.t or not 0 < count <= BLOCK:
            raise ProtocolError(self.dealer, tag, f"a block of {count} decisions from {first}, "
                                                  f"expected one from {self.t}")
        A = self.s.arms
        try:
            self.block = _expand_share(msg, [(count,), (count, A), (count, A)], self.dealer)
        except ProtocolError as e:
            raise ProtocolError(e.peer, tag, e.reason) from None
        self.pos = 0
        if self.ack is not None:
            self.ack(first)

    def take(self, count: int) -> tuple[AShare, AShare, AShare]:
        """The next count decisions' [y] (B,), [y v] (B, A) at 2L bits, [gamma] (B, A)."""
        parts = []
        while count:
            if self.pos == (len(self.block[0]) if self.block else 0):
                self._open_block()
            k = min(count, len(self.block[0]) - self.pos)
            parts.append([b[self.pos:self.pos + k] for b in self.block])
            self.pos += k
            self.t += k
            count -= k
        y, yv, g = (np.concatenate([p[i] for p in parts]) for i in range(3))
        L = self.s.precision_bits
        return AShare(y, 0, self.lead), AShare(yv, 2 * L, self.lead), AShare(g, 0, self.lead)
