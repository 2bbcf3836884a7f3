"""Hannun's p' in a service (docs/serve.md, "How the parties sequence a batch"): it orders
every op and learns the arms. Decision batches are issued as they come (at most
serve.in_flight under way) and run at the holders beside each other and beside an update (one
at a time, mpcbandit/mpc/schedule.py); each reads the model of the updates p' knows applied,
which its op log record names (``model``). Records are logged in op order, a decision batch's
once the holders said which slices they have, before its arms are opened to p'.
"""

from __future__ import annotations

import logging
import time
from collections import deque

import numpy as np

from mpcbandit.bodies import expect_field, expect_seconds
from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.schedule import EdgeOp
from mpcbandit.protocols.hannun.protocol import holders
from mpcbandit.protocols.hannun.ops import DECIDE, UPDATE, opened_arms, share_choices
from mpcbandit.protocols.hannun.serve_holder import (DEALER as DEALER0, HAVE, REWARD as P2,
                                                     expect_flags)
from mpcbandit.serve.leader import Leader
from mpcbandit.serve.loop import OPS, POLL_S, UP, ServeContext, durable

__all__ = ["Puller", "WAIT_S"]

log = logging.getLogger("mpcbandit.serve")
#: how long p' with ops under way waits for one of their messages before it looks at its queue
WAIT_S = 0.002


class _Flight:
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


class Puller(Leader):
    """p': orders every op of the service and learns the arms. Decision batches are issued
    as they come (at most serve.in_flight under way) and run at the holders beside each other
    and beside an update (one at a time); each batch reads the model of the updates p' knows
    applied, which its op log record names (``model``)."""

    def __init__(self, ctx: ServeContext):
        s = ctx.section
        self.s, self.holders = s, holders(s)
        followers = self.holders + [P2]
        super().__init__(ctx, followers, followers + [DEALER0])
        self.eng = Engine(ctx.chan, self.holders, dealer=None)
        start = self.agree()
        saved = ctx.state.load(start) if start else {"t": 0, "arms": {}}
        self.t, self.arms = saved["t"], dict(saved["arms"])
        #: updates the holders applied (their notices), the update ops issued and not applied
        self.updates = saved.get("updates", 0)
        self.updating: deque[int] = deque()
        self.batches_since_update = 0
        self.flights: deque[_Flight] = deque()
        self.fit = self.serve.in_flight       # batches that fit in a round (the lead holder's)
        self.round_s = 0.0                    # the holders' round (the lead holder's word)
        self.arrivals: deque[float] = deque(maxlen=32)   # when the last requests were taken
        self.issued = self.oplog.n            # the last op number given out
        self.unlogged: deque[list] = deque()  # [n, kind, ids, extra, ready], in op order
        self.replay(start, lambda: len(self.arms))
        self.await_updates()

    # ------------------------------------------------------------ what p' hears
    def hear(self, peer: str, msg: dict) -> None:
        """p'' reports which ids have a reward, which decisions were closed; the lead holder
        that an update is applied."""
        for key, into in (("ready", self.ready), ("closed", self.closing)):
            for rid in msg.get(key, ()):
                if rid in self.arms:   # a notice repeated at a resume is applied once
                    into[rid] = None
        if "fit" in msg:
            fit = msg["fit"]
            if isinstance(fit, bool) or not isinstance(fit, int) or fit < 1:
                raise ProtocolError(peer, UP, f"fit {fit!r} is not a count of batches")
            if min(fit, self.serve.in_flight) != min(self.fit, self.serve.in_flight):
                log.info("decision batches under way at once: at most %d (%d fit in a round)",
                         min(fit, self.serve.in_flight), fit)
            self.fit = fit
            self.round_s = expect_seconds(msg.get("round_s"), peer, f"{UP} round_s")
        if "updated" in msg:
            n = msg.get("n")
            if not self.updating or n != self.updating[0]:
                raise ProtocolError(peer, UP, f"update op {n!r} applied, p' awaits "
                                              f"{list(self.updating)}")
            self.updating.popleft()
            self.updates = expect_field(msg, "updated", int, peer, UP)

    # ------------------------------------------------------------ the op log, in op order
    def op_number(self, kind: str, ids=None, **extra) -> int:
        """The next op number; its record is logged once it and every op before it are known
        (a decision batch's ids once the holders said which slices they have)."""
        self.issued += 1
        self.unlogged.append([self.issued, kind, ids, extra, ids is not None])
        return self.issued

    def _log_ready(self, n: int, ids: list[str]):
        """Op n's ids are known: log it and the ready ops after it once those before it are
        logged; the future of op n's record (None while an op before it awaits its ids)."""
        # unlogged holds consecutive op numbers from its first: op n is n - first in
        k = n - self.unlogged[0][0] if self.unlogged else -1
        entry = self.unlogged[k] if 0 <= k < len(self.unlogged) else None
        if entry is None or entry[0] != n or entry[4]:
            raise ProtocolError(self.ctx.name, "ops.wal", f"op {n}'s ids came, but it is no op "
                                "awaiting them (awaiting: "
                                f"{[e[0] for e in self.unlogged if not e[4]]})")
        entry[2], entry[4] = ids, True
        return self._flush_log(n)

    def _flush_log(self, want: int | None = None):
        fut = None
        while self.unlogged and self.unlogged[0][4]:
            n, kind, ids, extra, _ = self.unlogged.popleft()
            got = self.oplog.append(kind, ids, **extra)
            if self.oplog.n != n:
                raise ProtocolError(self.ctx.name, "ops.wal", f"logged op {self.oplog.n}, "
                                    f"expected {n}")
            if n == want:
                fut = got
        return fut

    # ------------------------------------------------------------ decision batches
    def issue(self, batch) -> None:
        """Ask the holders to decide a batch of tickets: those every holder has a slice of."""
        tickets, timeout = batch.items, self.serve.decision_timeout_s
        ids = [t.id for t in tickets]
        margin = min(0.25, 0.1 * timeout)
        wait_s = max(0.0, timeout - batch.waited_s - margin)
        before, t0 = self.chan.stats.total(), time.perf_counter()
        n = self.op_number("decide", model=self.updates)
        for h in self.holders:
            self.chan.send(OPS, h, {"kind": "prepare", "n": n, "ids": ids, "wait_s": wait_s,
                                    "model": self.updates})
        self.chan.send(OPS, P2, {"kind": "prepare", "n": n})
        self.flights.append(_Flight(n, tickets, before, t0))

    def _flagged(self, f: _Flight) -> bool:
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
        f.logged = self._log_ready(f.n, f.ids)
        if f.ids:   # the holders share meanwhile
            f.opening = EdgeOp(self.chan, DECIDE, opened_arms(self.eng, self.holders[0]))
        return True

    def _settle(self, f: _Flight) -> None:
        arms = [int(a) for a in f.opening.value] if f.ids else []
        if len(arms) != len(f.ids):
            raise ProtocolError(self.holders[0], DECIDE, f"{len(arms)} arms for {len(f.ids)} ids")
        if f.logged is not None:
            durable(f.logged)
        self.t += len(arms)
        self.arms.update(zip(f.ids, arms))
        if f.decided:
            self.port.report_stage("words", f.flagged_at - f.t0, len(f.decided))
            self.port.report_stage("rounds", time.perf_counter() - f.flagged_at, len(f.decided))
        self.settle_decisions(f.ids, arms, f.n, f.decided)
        self.chan.send(OPS, P2, {"kind": "decided", "ids": f.ids})
        self.op_done(f.n, "decide", len(f.ids), f.before, f.t0, checkpoint=False)

    def advance(self) -> bool:
        """Read the flags and openings that arrived, in op order; whether any did."""
        moved = False
        for f in self.flights:
            if f.ids is None:
                if not self._flagged(f):
                    break
                moved = True
        while self.flights and self.flights[0].ids is not None:
            f = self.flights[0]
            if f.ids and not f.opening.poll():
                break
            self._settle(self.flights.popleft())
            moved = True
        return moved

    def waiting_for(self) -> list[tuple[str, str]]:
        """The messages p' waits for: flags, the first opening, its followers' words."""
        wanted = [(UP, p) for p in self.listen]
        for f in self.flights:
            if f.ids is None:
                wanted += [(HAVE, h) for h in self.holders if h not in f.flags]
                break
        if self.flights and self.flights[0].opening is not None:
            wanted += self.flights[0].opening.waiting_for
        return wanted

    @property
    def in_flight(self) -> int:
        """Ops that may be under way: serve.in_flight at most, and no more than fit in a
        round (the lead holder's word: the network's delay over an op's computing in it)."""
        return max(1, min(self.serve.in_flight, self.fit))

    @property
    def room(self) -> bool:
        """Another op may start: decision batches and the update under way count alike (an
        update's rounds cost the holders as a batch's do)."""
        return len(self.flights) + len(self.updating) < self.in_flight

    @property
    def window_s(self) -> float:
        """How long a batch gathers requests: serve.batch_ms; with ops under way and more
        than one request coming in a round of the holders', that round if longer. A batch
        starts at a round's end, after a round carrying the holders' words, wherever in a
        round p' sends it; requests that come within one go in one op, which computes once a
        round for all (at wan 40/s: p50 532 -> 513 ms; at 10/s a round's wait gathered
        nothing and cost 25 ms)."""
        own = self.serve.batch_ms / 1000
        if not self.busy or len(self.arrivals) < 8:
            return own
        rate = (len(self.arrivals) - 1) / max(self.arrivals[-1] - self.arrivals[0], 1e-6)
        return max(own, self.round_s) if rate * self.round_s >= 1 else own

    @property
    def may_update(self) -> bool:
        """An update batch may start: none under way, and room for an op."""
        return not self.updating and self.room

    def update_size(self, ready: int) -> int:
        """A power of two (the rest wait for the next): the holders' dealer material is
        shaped by an update's size, and each size's first use waits for the dealer (two
        one-way delays for every holder, twice an update); few sizes come back and are
        fetched ahead."""
        return 1 << (min(ready, self.serve.max_update).bit_length() - 1)

    @property
    def busy(self) -> bool:
        """Ops under way: decision batches or updates."""
        return bool(self.flights or self.updating)

    # ------------------------------------------------------------ rewards
    def _announce(self, kind: str, ids: list[str], n: int):
        """Send an update or a drop to every follower (logged in op order, _flush_log); the
        cost counters at its start."""
        for p in self.followers:
            self.chan.send(OPS, p, {"n": n, "kind": kind, "ids": ids})
        return self.chan.stats.total(), time.perf_counter()

    def update(self, ids: list[str], n: int) -> None:
        before, t0 = self._announce("update", ids, n)
        chosen = [self.arms.pop(i) for i in ids]
        self.eng.run(Op(UPDATE, share_choices(self.eng, np.asarray(chosen), self.s.arms)))
        self.updating.append(n)
        self.batches_since_update = 0
        self.op_done(n, "update", len(ids), before, t0, checkpoint=False)

    def drop(self, ids: list[str], n: int) -> None:
        before, t0 = self._announce("drop", ids, n)
        for i in ids:
            self.arms.pop(i, None)
        self.op_done(n, "drop", len(ids), before, t0, checkpoint=False)

    # ------------------------------------------------------------ replayed at a resume
    def decide(self, ids: list[str], n: int, tickets=None) -> None:
        """A decision batch of the log, replayed (the model version it read, as logged)."""
        before, t0 = self.chan.stats.total(), time.perf_counter()
        op = {"n": n, "kind": "decide", "ids": ids}
        if "model" in self.replayed:
            op["model"] = self.replayed["model"]
        for h in self.holders:
            self.chan.send(OPS, h, op)
        arms = ([int(a) for a in self.eng.run(Op(DECIDE, opened_arms(self.eng, self.holders[0])))]
                if ids else [])
        if len(arms) != len(ids):
            raise ProtocolError(self.holders[0], DECIDE, f"{len(arms)} arms for {len(ids)} ids")
        self.t += len(ids)
        self.arms.update(zip(ids, arms))
        self.settle_decisions(ids, arms, n, tickets)
        self.chan.send(OPS, P2, {"n": n, "kind": "decide", "ids": ids})
        self.op_done(n, "decide", len(ids), before, t0)

    def replay(self, start: int, awaiting) -> None:
        super().replay(start, awaiting)
        self.issued = self.oplog.n

    def await_updates(self) -> None:
        """Wait until the holders applied every update issued (a resume's replayed ones, the
        last before a checkpoint or a stop)."""
        end = time.monotonic() + self.ctx.config.run.deadline_s
        while self.updating:
            if time.monotonic() > end:
                raise PeerTimeout(self.holders[0], f"{UP} (update op {self.updating[0]} "
                                  "applied)", self.ctx.config.run.deadline_s)
            self.chan.wait_any([(UP, p) for p in self.listen], POLL_S)
            self.read_up()

    # ------------------------------------------------------------ the loop
    def pump(self, take_new: bool = True) -> bool:
        """One turn: words, arrivals, a new decision batch (while fewer than serve.in_flight
        are under way), rewards, the log; whether anything moved."""
        self.read_up()
        self.take_rewards()
        worked = self.advance()
        if self.batches_since_update and not self.due:   # an update waits for one batch at most
            worked = self.pending_rewards(self.may_update) or worked
        if take_new and self.room and not self.due:
            # ops under way: look without waiting (their messages are waited for in run);
            # else wait on the queue a while
            batch = self.port.next_batch("decisions", patient=not self.busy,
                                         wait_s=0.0 if self.busy else self.queue_wait(),
                                         window_s=self.window_s)
            if batch is not None:
                self.arrivals.extend([time.monotonic()] * len(batch.items))
                self.issue(batch)
                self.batches_since_update += 1
                worked = True
        if not self.due:
            worked = self.pending_rewards(self.may_update) or worked
        self._flush_log()
        if self.due and not self.busy and not self.unlogged:
            self.checkpoint(self.oplog.n)
        return worked

    @property
    def due(self) -> bool:
        """A checkpoint is due: p' issues nothing new until every op under way has ended."""
        return self.issued - self.last_checkpoint >= self.serve.checkpoint_every

    def run(self) -> str | None:
        while not (self.leaving or self.ctx.stopping):
            worked = self.pump()
            if self.busy and not worked:   # an update alone under way too: p' spun through it
                self.chan.wait_any(self.waiting_for(), WAIT_S)
            self.idle_tick(worked or self.busy)
        return self.stop()

    def drain(self) -> None:
        """Let every op under way end, issuing no new decision batch (bounded by the
        deadlines); at a stop, also apply the rewards still gathering."""
        limit = self.serve.decision_timeout_s + self.ctx.config.run.deadline_s
        end = time.monotonic() + limit
        while self.busy or self.unlogged or (self.ready and not self.gathering):
            if time.monotonic() > end:
                raise PeerTimeout(" or ".join(self.holders), f"{DECIDE} (ops under way: "
                                  f"{[f.n for f in self.flights] + list(self.updating)})",
                                  limit)
            if not self.pump(take_new=False):
                self.chan.wait_any(self.waiting_for(), WAIT_S if self.flights else POLL_S)

    def prepare(self, batch) -> None:
        """A batch decided on its own (at a stop: the batches still queued)."""
        self.issue(batch)
        self.drain()

    def settle(self) -> None:
        self.drain()

    def stop(self) -> str | None:
        self.gathering = False   # the rewards ready are applied before the last checkpoint
        self.drain()
        return super().stop()

    def state(self) -> dict:
        return {"t": self.t, "arms": self.arms, "updates": self.updates}
