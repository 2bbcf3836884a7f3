"""The ops under way at p' (docs/serve.md, "How the parties sequence a batch") and how many
may be. A decision batch is asked of the holders, flagged by them (which slices each has), then
its arms are opened to p'; an update is under way until the lead holder says it applied it.
Batches end in op order; p' waits for their messages without blocking its queue.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Callable, Iterator

from mpcbandit.bodies import expect_field, expect_seconds
from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.schedule import EdgeOp
from mpcbandit.protocols.hannun.ops import DECIDE, opened_arms
from mpcbandit.protocols.hannun.serve_holder import REWARD as P2
from mpcbandit.protocols.hannun.serve_holder_queue import HAVE, expect_flags
from mpcbandit.protocols.hannun.serve_order import OpOrder
from mpcbandit.serve.loop import OPS, POLL_S, UP

__all__ = ["Flight", "Flights", "Pace"]

log = logging.getLogger("mpcbandit.serve")


class Flight:
    """A decision batch under way at p': its op, tickets and cost counters at its start, the
    holders' flags on their slices, then the opening of its arms."""

    def __init__(self, n: int, tickets: list, before, t0: float):
        self.n, self.tickets, self.before, self.t0 = n, tickets, before, t0
        self.flags: dict[str, list] = {}
        self.ids: list[str] | None = None       # those every holder has (once flagged)
        self.decided: list = []                  # their tickets
        self.opening: EdgeOp | None = None
        self.logged = None                       # its op log record's future
        self.flagged_at = 0.0                    # when the last holder's flags came


class Flights:
    """The decision batches and updates under way at p', in op order, and what p' waits for
    of them."""

    def __init__(self, chan, eng: Engine, holders: list[str], order: OpOrder,
                 refuse: Callable, pace: "Pace"):
        """order: where a flagged batch's record is logged; refuse(ticket, missing, what):
        answers a ticket some holder has no slice of (Leader.refuse); pace: how many ops may
        be under way."""
        self.chan, self.eng, self.holders = chan, eng, holders
        self.order, self.refuse, self.pace = order, refuse, pace
        self.batches: deque[Flight] = deque()
        self.updating: deque[int] = deque()     # the update ops issued and not applied

    def __len__(self) -> int:
        """Ops under way: decision batches and updates count alike (an update's rounds cost
        the holders as a batch's do)."""
        return len(self.batches) + len(self.updating)

    @property
    def busy(self) -> bool:
        """Ops under way: decision batches or updates."""
        return bool(self.batches or self.updating)

    @property
    def room(self) -> bool:
        """Another op may start (Pace.in_flight)."""
        return len(self) < self.pace.in_flight

    @property
    def may_update(self) -> bool:
        """An update batch may start: none under way, and room for an op."""
        return not self.updating and self.room

    def numbers(self) -> list[int]:
        """The op numbers under way: the decision batches', then the updates'."""
        return [f.n for f in self.batches] + list(self.updating)

    # ------------------------------------------------------------ decision batches
    def issue(self, n: int, tickets: list, wait_s: float, model: int, cost: tuple) -> None:
        """Ask the holders to prepare decision batch n on model version `model` (p'' hears of
        it too); cost: the counters at its start (before, t0)."""
        ids = [t.id for t in tickets]
        for h in self.holders:
            self.chan.send(OPS, h, {"kind": "prepare", "n": n, "ids": ids, "wait_s": wait_s,
                                    "model": model})
        self.chan.send(OPS, P2, {"kind": "prepare", "n": n})
        self.batches.append(Flight(n, tickets, *cost))

    def read_flags(self) -> bool:
        """Read the holders' flags that arrived, in op order (a batch still awaiting some
        stops it); whether a batch got all of its flags."""
        moved = False
        for f in self.batches:
            if f.ids is None:
                if not self._flagged(f):
                    break
                moved = True
        return moved

    def _flagged(self, f: Flight) -> bool:
        for h in self.holders:
            if h not in f.flags and self.chan.arrived(HAVE, h):
                f.flags[h] = expect_flags(self.chan.recv(HAVE, h), len(f.tickets), h)
        if len(f.flags) < len(self.holders):
            return False
        for k, ticket in enumerate(f.tickets):
            missing = [h for h in self.holders if not f.flags[h][k]]
            if missing:
                self.refuse(ticket, missing, "slice")
            else:
                f.decided.append(ticket)
        f.ids = [t.id for t in f.decided]
        f.flagged_at = time.perf_counter()
        if len(f.decided) < len(f.tickets):
            log.info("decision batch op %d: %d refused (slices missing)", f.n,
                     len(f.tickets) - len(f.decided))
        f.logged = self.order.log_ready(f.n, f.ids)
        if f.ids:   # the holders share meanwhile
            f.opening = EdgeOp(self.chan, DECIDE, opened_arms(self.eng, self.holders[0]))
        return True

    def opened(self) -> Iterator[tuple[Flight, list[int]]]:
        """The first batches, flagged and their arms opened (none decided: at once), each
        with its arms, taken off as it is given."""
        while self.batches and self.batches[0].ids is not None:
            f = self.batches[0]
            if f.ids and not f.opening.poll():
                return
            self.batches.popleft()
            yield f, self._arms(f.opening.value if f.ids else (), f.ids)

    def replay(self, n: int, ids: list[str], logged: dict) -> list[int]:
        """Ask the holders to decide batch n of the log again, on the model version its record
        (logged) names if it does; the arms opened to p'."""
        op = {"n": n, "kind": "decide", "ids": ids}
        if "model" in logged:
            op["model"] = logged["model"]
        for h in self.holders:
            self.chan.send(OPS, h, op)
        opened = self.eng.run(Op(DECIDE, opened_arms(self.eng, self.holders[0]))) if ids else ()
        return self._arms(opened, ids)

    def _arms(self, opened, ids: list[str]) -> list[int]:
        arms = [int(a) for a in opened]
        if len(arms) != len(ids):
            raise ProtocolError(self.holders[0], DECIDE, f"{len(arms)} arms for {len(ids)} ids")
        return arms

    def waiting_for(self) -> list[tuple[str, str]]:
        """The messages the batches wait for: the flags of the first not flagged, the first
        batch's opening."""
        wanted = []
        for f in self.batches:
            if f.ids is None:
                wanted += [(HAVE, h) for h in self.holders if h not in f.flags]
                break
        if self.batches and self.batches[0].opening is not None:
            wanted += self.batches[0].opening.waiting_for
        return wanted

    # ------------------------------------------------------------ updates
    def applied(self, peer: str, msg: dict) -> int:
        """The lead holder's notice that the first update under way is applied; the count of
        updates applied it gives."""
        n = msg.get("n")
        if not self.updating or n != self.updating[0]:
            raise ProtocolError(peer, UP, f"update op {n!r} applied, p' awaits "
                                          f"{list(self.updating)}")
        self.updating.popleft()
        return expect_field(msg, "updated", int, peer, UP)

    def await_updates(self, listen: list[str], read_up: Callable, deadline_s: float) -> None:
        """Wait until the holders applied every update a resume replayed, before p' serves;
        read_up reads the words of `listen` (UP), the lead holder's notices among them
        (Leader.read_up)."""
        end = time.monotonic() + deadline_s
        while self.updating:
            if time.monotonic() > end:
                raise PeerTimeout(self.holders[0], f"{UP} (update op {self.updating[0]} "
                                  "applied)", deadline_s)
            self.chan.wait_any([(UP, p) for p in listen], POLL_S)
            read_up()


class Pace:
    """How fast p' issues ops: how many may be under way and how long a batch gathers
    requests, from the lead holder's word on the holders' rounds and the requests' rate."""

    def __init__(self, serve):
        self.serve = serve
        self.fit = serve.in_flight            # batches that fit in a round (the lead holder's)
        self.round_s = 0.0                    # the holders' round (the lead holder's word)
        self.arrivals: deque[float] = deque(maxlen=32)   # when the last requests were taken

    def heard(self, peer: str, msg: dict) -> None:
        """The lead holder's word: how many batches fit in a round, how long a round takes."""
        fit = msg["fit"]
        if isinstance(fit, bool) or not isinstance(fit, int) or fit < 1:
            raise ProtocolError(peer, UP, f"fit {fit!r} is not a count of batches")
        if min(fit, self.serve.in_flight) != min(self.fit, self.serve.in_flight):
            log.info("decision batches under way at once: at most %d (%d fit in a round)",
                     min(fit, self.serve.in_flight), fit)
        self.fit = fit
        self.round_s = expect_seconds(msg.get("round_s"), peer, f"{UP} round_s")

    def took(self, count: int) -> None:
        """`count` requests were taken from the queue now."""
        self.arrivals.extend([time.monotonic()] * count)

    @property
    def in_flight(self) -> int:
        """Ops that may be under way: serve.in_flight at most, and no more than fit in a
        round (the lead holder's word: the network's delay over an op's computing in it)."""
        return max(1, min(self.serve.in_flight, self.fit))

    def window_s(self, busy: bool) -> float:
        """How long a batch gathers requests: serve.batch_ms; with ops under way (busy) and
        more than one request coming in a round of the holders', that round if longer. A
        batch starts at a round's end, after a round carrying the holders' words, wherever in
        a round p' sends it; requests that come within one go in one op, which computes once
        a round for all (at wan 40/s: p50 532 -> 513 ms; at 10/s a round's wait gathered
        nothing and cost 25 ms)."""
        own = self.serve.batch_ms / 1000
        if not busy or len(self.arrivals) < 8:
            return own
        rate = (len(self.arrivals) - 1) / max(self.arrivals[-1] - self.arrivals[0], 1e-6)
        return max(own, self.round_s) if rate * self.round_s >= 1 else own
