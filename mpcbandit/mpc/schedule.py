"""Ops that join lock-step rounds at any round: the computing parties of a service run a
decision batch while an update is half done, and a second decision batch while the first is.

``gather`` (rounds.py) merges ops that start together; a ``RoundScheduler`` keeps running
merged rounds among its *core* parties (the computing parties) while ops join and leave. Every
core party must start the same ops at the same round, in the same order (the dealer's
material is taken in that order): what each party tells the others in a round's message (its
``header``) is read by all of them at the round's end, so a rule on the headers (Hannun's
holders: an op starts once every holder said it is ready for it) starts ops alike everywhere.

Peers outside the core (a party that only inputs a value or learns an opened one: Hannun's p'
and p'') do not see rounds: each op's messages to and from them travel under the op's own
label, one message per op and round (a flat list of its bodies, as ``run_ops`` sends), so such
a party runs its part of each op on its own, in the order the ops started.
"""

from __future__ import annotations

import statistics
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from mpcbandit.errors import ProtocolError
from mpcbandit.mpc.rounds import IN_OP, Merged, OpGen, Round

__all__ = ["RoundScheduler", "Running", "EdgeOp", "payload_bytes", "FIT_SAMPLES"]

#: rounds RoundScheduler.fit looks back on
FIT_SAMPLES = 64


@dataclass
class Running:
    """An op in the scheduler: its key (the caller's name for it), label, generator, the
    merged rounds it has taken part in, and what to call with its result."""

    key: Any
    label: str
    gen: OpGen
    on_done: Callable[[Any, "Running"], None] | None = None
    rounds: int = 0
    #: the payload it sent (payload_bytes: arrays and packed bits)
    bytes_sent: int = 0
    round: Round | None = field(default=None, repr=False)


def _flat(body) -> list:
    return list(body) if isinstance(body, Merged) else [body]


def _edge_bodies(msg, k: int, rnd: Round, peer: str, label: str):
    """A party outside the core's message for one op's round (a flat list of k bodies, as
    run_ops sends): the op's one body, or its k as a Merged."""
    if not isinstance(msg, list) or len(msg) != k:
        raise ProtocolError(peer, label, f"expected {k} bodies for this op's round, got "
                            f"{str(msg)[:60]}")
    return rnd.take(msg, 0, k)


def payload_bytes(body) -> int:
    """The bytes of the arrays and packed bits in a body (what an op sends, without the
    envelopes: a merged round's message carries several ops' bodies); a scalar counts 8."""
    if isinstance(body, np.ndarray):
        return body.nbytes
    if isinstance(body, (bytes, bytearray)):
        return len(body)
    if isinstance(body, dict):
        return sum(payload_bytes(v) for v in body.values())
    if isinstance(body, (list, tuple)):
        return sum(payload_bytes(v) for v in body)
    return 8


class RoundScheduler:
    """One party's merged rounds among the core parties, ops joining between any two."""

    def __init__(self, chan, label: str, core: list[str], me: str):
        self.chan, self.label, self.me = chan, label, me
        self.others = [p for p in core if p != me]
        self._waiting: list[Running] = []    # added, to start after the current round
        self.active: list[Running] = []      # in the order they started
        self.rounds = 0
        #: the last rounds' seconds computing per op (its steps and messages), for fit
        self.per_op_s: deque[float] = deque(maxlen=FIT_SAMPLES)
        #: the last rounds' seconds (with an op: computing and waiting), for round_time
        self.round_s: deque[float] = deque(maxlen=FIT_SAMPLES)
        #: the network's one-way delay to the others (probe_delay; None: not measured)
        self.delay_s: float | None = None

    @property
    def idle(self) -> bool:
        """No op is running or waiting to start."""
        return not self.active and not self._waiting

    def add(self, key, label: str, gen: OpGen,
            on_done: Callable[[Any, Running], None] | None = None) -> None:
        """Start an op at the next round (every core party must add it at the same point)."""
        self._waiting.append(Running(key, label, gen, on_done))

    def _start_waiting(self) -> None:
        # an op that ends before its first round (nothing to exchange) may start another
        while self._waiting:
            op = self._waiting.pop(0)
            try:
                op.round = op.gen.send(None)
            except StopIteration as stop:
                if op.on_done is not None:
                    op.on_done(stop.value, op)
                continue
            self.active.append(op)

    def step(self, header: Any = None) -> dict[str, Any]:
        """Run one merged round of every active op (starting those added first); header: what
        this party tells the others (its word on what starts next). Returns the headers
        the others sent; ops that end call their on_done, in the order they started."""
        t0 = time.perf_counter()
        self._start_waiting()   # with none under way, a round carries the headers alone
        core: dict[str, Merged] = {p: Merged() for p in self.others}
        parts: dict[str, int] = dict.fromkeys(self.others, 0)
        expected = [op.round.expected() for op in self.active]
        for op, wants in zip(self.active, expected):
            for peer, body in op.round.send.items():
                op.bytes_sent += payload_bytes(body)
                if peer in core:
                    core[peer].extend(_flat(body))
                else:   # outside the core: under the op's label, one message per op
                    self.chan.send(op.label, peer, _flat(body))
            for peer, k in wants.items():
                if peer in parts:
                    parts[peer] += k
        t1 = time.perf_counter()
        got = self.chan.exchange(self.label, send={p: {"h": header, "b": list(core[p])}
                                                   for p in self.others}, recv=self.others)
        t2 = time.perf_counter()
        self.rounds += 1
        headers, bodies = {}, {}
        for peer in self.others:
            msg = got[peer]
            if not isinstance(msg, dict) or not isinstance(msg.get("b"), list):
                raise ProtocolError(peer, f"{self.label} round {self.rounds}",
                                    "expected a merged round {h, b}")
            if len(msg["b"]) != parts[peer]:
                raise ProtocolError(peer, f"{self.label} round {self.rounds}",
                                    f"{len(msg['b'])} bodies, this party's ops expect "
                                    f"{parts[peer]}: parties are not running the same ops")
            headers[peer], bodies[peer] = msg.get("h"), msg["b"]
        pos = dict.fromkeys(self.others, 0)
        still: list[Running] = []
        done: list[tuple[Running, Any]] = []
        for op, wants in zip(self.active, expected):
            mine = {}
            for peer, k in wants.items():
                if peer in pos:
                    at = pos[peer]
                    mine[peer] = op.round.take(bodies[peer], at, k)
                    pos[peer] = at + k
                else:
                    mine[peer] = _edge_bodies(self.chan.recv(op.label, peer), k, op.round,
                                              peer, op.label)
            op.rounds += 1
            try:
                with np.errstate(over="ignore"):
                    op.round = op.gen.send(mine)
                still.append(op)
            except StopIteration as stop:
                done.append((op, stop.value))
            except ProtocolError as e:
                if e.tag != IN_OP:
                    raise
                raise ProtocolError(e.peer, f"{op.label} (op {op.key}) round {op.rounds}",
                                    e.reason) from None
        self.active = still
        for op, value in done:
            if op.on_done is not None:
                op.on_done(value, op)
        ops = len(self.active) + len(done)
        if ops:
            end = time.perf_counter()
            self.per_op_s.append((end - t2 + t1 - t0) / ops)
            self.round_s.append(end - t0)
        return headers

    def probe_delay(self, lead: str, probes: int = 8) -> None:
        """Measure the network's one-way delay to the others (delay_s, at lead; every core
        party calls it at the same point, nothing under way): lead sends each a probe, which
        it answers at once; half the shortest of the round trips. Rounds do not show it: a
        party's wait for the others' messages is also their computing, their lateness and,
        on a loaded machine, their turn for a core."""
        tag = f"{self.label}.probe"
        if self.me != lead:
            for _ in range(probes):
                self.chan.send(tag, lead, self.chan.recv(tag, lead))
            return
        trips = []
        for k in range(probes):
            for peer in self.others:
                t0 = time.perf_counter()
                self.chan.send(tag, peer, k)
                if self.chan.recv(tag, peer) != k:
                    raise ProtocolError(peer, tag, f"probe {k} answered out of turn")
                trips.append(time.perf_counter() - t0)
        self.delay_s = min(trips) / 2

    def round_time(self) -> float | None:
        """The median of the last rounds' seconds (None: none with an op yet)."""
        return statistics.median(self.round_s) if self.round_s else None

    def fit(self) -> int | None:
        """How many ops fit in a round (None: not known yet): the network's delay over an
        op's computing in a round (the median of the last rounds': one fetching the dealer's
        material is long). Ops under way together share rounds well while the rounds wait on
        the network; where computing fills them (loopback, a LAN, a busy machine) one op on
        many rows costs less than many on few."""
        if self.delay_s is None or not self.per_op_s:
            return None
        per_op = statistics.median(self.per_op_s)
        return max(1, min(int(self.delay_s / per_op), 2**16)) if per_op > 0 else 2**16


class EdgeOp:
    """An op's part at a party outside the core (it inputs a value or learns an opened one),
    driven without blocking: ``poll`` goes on while its messages have arrived, so the party
    can run several ops' parts at once (Hannun's p' with decision batches under way)."""

    def __init__(self, chan, label: str, gen: OpGen):
        self.chan, self.label, self.gen = chan, label, gen
        self.done, self.value = False, None
        self.round: Round | None = None
        self._got: dict[str, Any] = {}     # the current round's messages taken so far
        self._next(None)

    def _next(self, got) -> None:
        while True:
            try:
                with np.errstate(over="ignore"):
                    self.round = self.gen.send(got)
            except StopIteration as stop:
                self.done, self.value, self.round = True, stop.value, None
                return
            for peer, body in self.round.send.items():
                self.chan.send(self.label, peer, _flat(body))
            if self.round.recv:
                return
            got = {}

    @property
    def waiting_for(self) -> list[tuple[str, str]]:
        """The (label, peer) messages its current round still waits for."""
        return [] if self.done else [(self.label, p) for p in self.round.expected()
                                     if p not in self._got]

    def poll(self) -> bool:
        """Take the messages of its round that have arrived, and go on once all have;
        whether it is done."""
        while not self.done:
            wants = self.round.expected()
            for peer, k in wants.items():
                if peer not in self._got and self.chan.arrived(self.label, peer):
                    self._got[peer] = _edge_bodies(self.chan.recv(self.label, peer), k,
                                                   self.round, peer, self.label)
            if len(self._got) < len(wants):
                return False
            got, self._got = self._got, {}
            self._next(got)
        return True
