"""Ops as generators of rounds, merged in lock-step so independent ops share exchanges.

An op is a generator that yields ``Round(send={peer: body}, recv=(peer, ...))`` for each
communication round it needs and receives ``{peer: body}`` back; it returns its result.
``gather(gens)`` runs several ops in lock-step and yields ONE merged round per step, so
``rounds(gather(a, b)) == max(rounds(a), rounds(b))``. ``run_ops`` drives a gather over a
Channel with one ``chan.exchange(label, ...)`` per merged round. On the wire a message to a
peer is the list of the bodies of the ops that send to that peer, in op order; every party
runs the same ops in the same order, so the receiver splits it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generator

import numpy as np

from mpcbandit.errors import ProtocolError

__all__ = ["Round", "Op", "OpGen", "gather", "run_ops"]

#: the tag of an error raised inside an op: run_ops puts the op's label and round in its place
IN_OP = "?"


@dataclass
class Round:
    """One round of one op: what it sends to whom, and whom it waits for."""

    send: dict[str, Any] = field(default_factory=dict)
    recv: tuple[str, ...] = ()


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
        send: dict[str, list] = {}
        recv: list[str] = []
        for i in order:
            for peer, body in cur[i].send.items():
                send.setdefault(peer, []).append(body)
            for peer in cur[i].recv:
                if peer not in recv:
                    recv.append(peer)
        got = yield Round(send, tuple(recv))
        pos = dict.fromkeys(got, 0)
        answers = []
        for i in order:
            mine = {}
            for peer in cur[i].recv:
                msgs = got[peer]
                if not isinstance(msgs, list) or pos[peer] >= len(msgs):
                    raise ProtocolError(peer, IN_OP, "message has fewer parts than this party's "
                                        "ops expect: parties are not running the same ops")
                mine[peer] = msgs[pos[peer]]
                pos[peer] += 1
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
