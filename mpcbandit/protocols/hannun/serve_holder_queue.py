"""Which of p''s ops a feature holder starts when (docs/serve.md, "How the parties sequence a
batch"). The holders run their ops in merged rounds (mpcbandit/mpc/schedule.py); each holder's
round message carries its word that it is ready for the ops it read (a prepare's: its flags on
its slices), and an op starts, in p''s order, after the round in which the last word on it
came, so that every holder starts the same ops at the same round.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Callable, Iterator

from mpcbandit.bodies import expect_field, expect_seconds
from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.hannun.ops import UPDATE
from mpcbandit.serve.loop import OPS, Follower

__all__ = ["HAVE", "OpQueue", "Pending", "expect_flags"]

HAVE = "serve.have"          # each holder tells the others and p' which slices it has


def expect_flags(body, count: int, peer: str) -> list[bool]:
    """A holder's flags on a batch's `count` slices (which it has), checked."""
    if not isinstance(body, list) or len(body) != count or not all(isinstance(b, bool)
                                                                    for b in body):
        raise ProtocolError(peer, HAVE, f"expected {count} bools (which slices it has), got "
                                        f"{str(body)[:80]}")
    return body


class Pending:
    """An op of p''s this holder has read and not started: its place in p''s order and each
    holder's word that it is ready for it (a prepare's: its flags on its slices)."""

    def __init__(self, op: dict, seq: int, until: float):
        self.op, self.seq, self.until = op, seq, until
        self.ready: dict[str, object] = {}


class OpQueue:
    """p''s ops a holder has read and not started, in p''s order, with every holder's word
    on each."""

    def __init__(self, chan, follower: Follower, store, holders: list[str], name: str,
                 inputs: list[str]):
        """store: the holder's slices (ContextStore); inputs: the parties whose inputs an
        update waits for (p', p'')."""
        self.chan, self.follower, self.store = chan, follower, store
        self.leader, self.holders, self.name, self.inputs = follower.leader, holders, name, inputs
        #: p''s ops read and not started
        self.pending: deque[Pending] = deque()
        #: how many were read, the next one's seq: counted, as with none pending nothing else
        #: says it (follower.n counts numbered ops only: not a checkpoint, "live" or "stop")
        self.read = 0
        #: the others' words on ops this holder has not read yet: seq -> {holder: word}
        self.early: dict[int, dict[str, object]] = {}

    def read_op(self, wait: bool = False) -> bool:
        """Read p''s next op if it has arrived (wait: until it comes); whether one was."""
        if not wait and not self.chan.arrived(OPS, self.leader):
            return False
        op = self.follower.next_op(wait_s=None if wait else 0.0)
        if op is None:
            return False
        until = (time.monotonic() + expect_seconds(op.get("wait_s"), self.leader,
                                                   f"{HAVE} op {op.get('n')} wait_s")
                 if op["kind"] == "prepare" else 0.0)
        self.pending.append(Pending(op, self.read, until))
        self.read += 1
        return True

    def my_word(self, p: Pending, block: bool):
        """This holder's word that it is ready for p (None: not yet): a prepare's flags once
        it has its slices or its wait is over (block: wait for that), an update once p''s
        and p'''s inputs are here (a round waiting for them would hold every op back)."""
        kind = p.op["kind"]
        if kind == "prepare":
            ids = expect_field(p.op, "ids", list, self.leader, f"{HAVE} op {p.op.get('n')}")
            left = max(0.0, p.until - time.monotonic())
            have = self.store.wait(ids, left if block else 0.0)
            return have if all(have) or time.monotonic() >= p.until else None
        if kind == "update" and not block:
            return True if all(self.chan.arrived(UPDATE, q) for q in self.inputs) else None
        return True

    def announce(self, block: bool) -> list:
        """The words this holder has not given yet ([seq, word] each); a prepare's flags go to
        p' too. block: the first op's word is waited for (nothing is under way)."""
        words = []
        for k, p in enumerate(self.pending):
            if self.name not in p.ready:
                word = self.my_word(p, block and k == 0)
                if word is not None:
                    p.ready[self.name] = word
                    words.append([p.seq, word])
                    if p.op["kind"] == "prepare":
                        self.chan.send(HAVE, self.leader, word)
        return words

    def hear(self, headers: dict, tag: str) -> None:
        """The other holders' words of a round (tag: which, for an error); one on an op this
        holder has not read yet waits for it."""
        for peer, words in headers.items():
            if not isinstance(words, list):
                raise ProtocolError(peer, tag, f"expected words [[seq, word]], got {words!r:.60}")
            for word in words:
                first = self.pending[0].seq if self.pending else self.read
                if (not isinstance(word, list) or len(word) != 2 or isinstance(word[0], bool)
                        or not isinstance(word[0], int) or word[0] < first
                        or peer in self.early.get(word[0], {})):
                    raise ProtocolError(peer, tag, f"a word on no op waiting: {str(word)[:60]}")
                self.early.setdefault(word[0], {})[peer] = word[1]
        for p in self.pending:
            for peer, word in self.early.pop(p.seq, {}).items():
                if p.op["kind"] == "prepare":
                    expect_flags(word, len(p.op["ids"]), peer)
                p.ready[peer] = word

    def ready(self, may_start: Callable[[dict], bool]) -> Iterator[Pending]:
        """In p''s order, the ops every holder said it is ready for and may_start(op) lets
        start, each taken off as it is given (started before the next is looked at)."""
        while self.pending:
            p = self.pending[0]
            if len(p.ready) < len(self.holders) or not may_start(p.op):
                return
            yield self.pending.popleft()
