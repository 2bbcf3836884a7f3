"""Ops as generators of rounds, merged in lock-step so independent ops share exchanges.

An op is a generator that yields ``Round(send={peer: body}, recv=(peer, ...))`` for each
communication round it needs and receives ``{peer: body}`` back; it returns its result.
``gather(gens)`` runs several ops in lock-step and yields ONE merged round per step, so
``rounds(gather(a, b)) == max(rounds(a), rounds(b))``. ``run_ops`` drives a gather over a
Channel with one ``chan.exchange(label, ...)`` per merged round.

On the wire a message to a peer is ONE flat list: the bodies of every op that sends to that
peer, in op order, however deeply gathers nest (a nested gather's bodies are spliced in, not
sent as a sub-list). A receiver splits it by how many bodies each of its own ops expects from
that peer, so a party that runs one op (p' opening its selection) reads a message that the
sender merged from several nested chains without mirroring their nesting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generator

import numpy as np

from mpcbandit.errors import ProtocolError

__all__ = ["Round", "Merged", "Op", "OpGen", "gather", "run_ops"]

#: the tag of an error raised inside an op: run_ops puts the op's label and round in its place
IN_OP = "?"


@dataclass
class Round:
    """One round of one op: what it sends to whom, and whom it waits for."""

    send: dict[str, Any] = field(default_factory=dict)
    recv: tuple[str, ...] = ()
    #: bodies expected from each peer in recv (a merged round's); None: one from each
    parts: dict[str, int] | None = None

    def expected(self) -> dict[str, int]:
        """{peer: how many bodies this round takes from it}."""
        return self.parts if self.parts is not None else dict.fromkeys(self.recv, 1)

    def take(self, msgs: list, at: int, k: int):
        """This round's part of a flat message from a peer: a leaf op's one body at at, a
        merged round's k bodies from at (to split in turn)."""
        return msgs[at] if self.parts is None else Merged(msgs[at:at + k])


class Merged(list):
    """The bodies several ops send one peer in one round: spliced flat into an outer merge."""


OpGen = Generator[Round, dict, Any]


@dataclass
class Op:
    """A not-yet-run op: its label (for the transport's accounting) and its generator."""

    label: str
    gen: OpGen


def gather(gens: list[OpGen]) -> OpGen:
    """Run gens in lock-step, one merged Round per step; return their results in order."""
    out: list[Any] = [None] * len(gens)
    cur: dict[int, Round] = {}

    def advance(i: int, value: Any) -> None:
        try:
            cur[i] = gens[i].send(value)
        except StopIteration as stop:
            out[i] = stop.value
            cur.pop(i, None)

    for i in range(len(gens)):
        advance(i, None)
    while cur:
        order = sorted(cur)
        expected = [cur[i].expected() for i in order]
        send: dict[str, Merged] = {}
        parts: dict[str, int] = {}
        for i, wants in zip(order, expected):
            for peer, body in cur[i].send.items():
                bodies = send.setdefault(peer, Merged())
                if isinstance(body, Merged):
                    bodies.extend(body)
                else:
                    bodies.append(body)
            for peer, k in wants.items():
                parts[peer] = parts.get(peer, 0) + k
        got = yield Round(send, tuple(parts), parts)
        pos = dict.fromkeys(got, 0)
        answers = []
        for i, wants in zip(order, expected):
            mine = {}
            for peer, k in wants.items():
                msgs, at = got[peer], pos[peer]
                if not isinstance(msgs, list) or at + k > len(msgs):
                    raise ProtocolError(peer, IN_OP, "message has fewer parts than this party's "
                                        "ops expect: parties are not running the same ops")
                mine[peer] = cur[i].take(msgs, at, k)
                pos[peer] = at + k
            answers.append(mine)
        for peer, k in pos.items():
            if k != len(got[peer]):
                raise ProtocolError(peer, IN_OP, f"message has {len(got[peer])} parts, this "
                                    f"party's ops used {k}: parties are not running the same ops")
        for i, a in zip(order, answers):
            advance(i, a)
    return out


def run_ops(chan, label: str, gens: list[OpGen]) -> list[Any]:
    """Drive gather(gens) over chan: one exchange labelled label per merged round."""
    g = gather(gens)
    n = 0
    with np.errstate(over="ignore"):  # ring arithmetic wraps on purpose (0-d arrays warn)
        try:
            rnd = next(g)
            while True:
                got = chan.exchange(label, send=rnd.send, recv=rnd.recv) if (rnd.send or rnd.recv) else {}
                n += 1
                rnd = g.send(got)
        except StopIteration as stop:
            return stop.value
        except ProtocolError as e:
            if e.tag != IN_OP:  # the ops check bodies without knowing the round they are in
                raise
            raise ProtocolError(e.peer, f"{label} round {n}", e.reason) from None
