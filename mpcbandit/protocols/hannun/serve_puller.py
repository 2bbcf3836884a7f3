"""Hannun's p' in a service (docs/serve.md, "How the parties sequence a batch"): it orders
every op and learns the arms. Decision batches are issued as they come (at most
serve.in_flight under way) and run at the holders beside each other and beside an update (one
at a time, mpcbandit/mpc/schedule.py); each reads the model of the updates p' knows applied,
which its op log record names (``model``). Records are logged in op order, a decision batch's
once the holders said which slices they have, before its arms are opened to p'.
"""

from __future__ import annotations

import time

import numpy as np

from mpcbandit.errors import PeerTimeout
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Op
from mpcbandit.protocols.hannun.protocol import holders
from mpcbandit.protocols.hannun.ops import DECIDE, UPDATE, share_choices
from mpcbandit.protocols.hannun.serve_flights import Flight, Flights, Pace
from mpcbandit.protocols.hannun.serve_holder import DEALER as DEALER0, REWARD as P2
from mpcbandit.protocols.hannun.serve_order import OpOrder
from mpcbandit.serve.leader import Leader
from mpcbandit.serve.loop import OPS, POLL_S, UP, ServeContext, durable

__all__ = ["Puller", "WAIT_S"]

#: how long p' with ops under way waits for one of their messages before it looks at its queue
WAIT_S = 0.002


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
        self.updates = saved.get("updates", 0)   # updates the holders applied (their notices)
        self.batches_since_update = 0
        self.order = OpOrder(self.oplog, ctx.name)
        self.pace = Pace(self.serve)
        self.flights = Flights(self.chan, self.eng, self.holders, self.order, self.refuse,
                               self.pace)
        self.replay(start, lambda: len(self.arms))
        self.flights.await_updates(self.listen, self.read_up, ctx.config.run.deadline_s)

    # ------------------------------------------------------------ what p' hears
    def hear(self, peer: str, msg: dict) -> None:
        """p'' reports which ids have a reward, which decisions were closed; the lead holder
        how many batches fit in a round, and that an update is applied."""
        for key, into in (("ready", self.ready), ("closed", self.closing)):
            for rid in msg.get(key, ()):
                if rid in self.arms:   # a notice repeated at a resume is applied once
                    into[rid] = None
        if "fit" in msg:
            self.pace.heard(peer, msg)
        if "updated" in msg:
            self.updates = self.flights.applied(peer, msg)

    def op_number(self, kind: str, ids=None, **extra) -> int:
        """The next op number (its record is logged in op order: OpOrder)."""
        return self.order.number(kind, ids, **extra)

    # ------------------------------------------------------------ decision batches
    def issue(self, batch) -> None:
        """Ask the holders to decide a batch of tickets: those every holder has a slice of."""
        wait_s = self.slices_wait(batch)
        cost = self.chan.stats.total(), time.perf_counter()
        n = self.op_number("decide", model=self.updates)
        self.flights.issue(n, batch.items, wait_s, self.updates, cost)

    def _settle(self, f: Flight, arms: list[int]) -> None:
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
        moved = self.flights.read_flags()
        for f, arms in self.flights.opened():
            self._settle(f, arms)
            moved = True
        return moved

    def waiting_for(self) -> list[tuple[str, str]]:
        """The messages p' waits for: its followers' words, flags, the first opening."""
        return [(UP, p) for p in self.listen] + self.flights.waiting_for()

    def update_size(self, ready: int) -> int:
        """A power of two (the rest wait for the next): the holders' dealer material is
        shaped by an update's size, and each size's first use waits for the dealer (two
        one-way delays for every holder, twice an update); few sizes come back and are
        fetched ahead."""
        return 1 << (min(ready, self.serve.max_update).bit_length() - 1)

    # ------------------------------------------------------------ rewards
    def _announce(self, kind: str, ids: list[str], n: int):
        """Send an update or a drop to every follower (logged in op order, OpOrder); the
        cost counters at its start."""
        for p in self.followers:
            self.chan.send(OPS, p, {"n": n, "kind": kind, "ids": ids})
        return self.chan.stats.total(), time.perf_counter()

    def update(self, ids: list[str], n: int) -> None:
        before, t0 = self._announce("update", ids, n)
        chosen = [self.arms.pop(i) for i in ids]
        self.eng.run(Op(UPDATE, share_choices(self.eng, np.asarray(chosen), self.s.arms)))
        self.flights.updating.append(n)
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
        arms = self.flights.replay(n, ids, self.replayed)
        self.t += len(ids)
        self.arms.update(zip(ids, arms))
        self.settle_decisions(ids, arms, n, tickets)
        self.chan.send(OPS, P2, {"n": n, "kind": "decide", "ids": ids})
        self.op_done(n, "decide", len(ids), before, t0)

    def replay(self, start: int, awaiting) -> None:
        super().replay(start, awaiting)
        self.order.issued = self.oplog.n

    # ------------------------------------------------------------ the loop
    def pump(self, take_new: bool = True) -> bool:
        """One turn: words, arrivals, a new decision batch (while fewer than serve.in_flight
        are under way), rewards, the log; whether anything moved."""
        self.read_up()
        self.take_rewards()
        worked = self.advance()
        if self.batches_since_update and not self.due:   # an update waits for one batch at most
            worked = self.pending_rewards(self.flights.may_update) or worked
        if take_new and self.flights.room and not self.due:
            # ops under way: look without waiting (their messages are waited for in run);
            # else wait on the queue a while
            busy = self.flights.busy
            batch = self.port.next_batch("decisions", patient=not busy,
                                         wait_s=0.0 if busy else self.queue_wait(),
                                         window_s=self.pace.window_s(busy))
            if batch is not None:
                self.pace.took(len(batch.items))
                self.issue(batch)
                self.batches_since_update += 1
                worked = True
        if not self.due:
            worked = self.pending_rewards(self.flights.may_update) or worked
        self.order.flush()
        if self.due and not self.flights.busy and not self.order.unlogged:
            self.checkpoint(self.oplog.n)
        return worked

    @property
    def due(self) -> bool:
        """A checkpoint is due: p' issues nothing new until every op under way has ended."""
        return self.order.issued - self.last_checkpoint >= self.serve.checkpoint_every

    def run(self) -> str | None:
        while not (self.leaving or self.ctx.stopping):
            worked = self.pump()
            # an update alone under way too: p' spun through it
            if self.flights.busy and not worked:
                self.chan.wait_any(self.waiting_for(), WAIT_S)
            self.idle_tick(worked or self.flights.busy)
        return self.stop()

    def drain(self) -> None:
        """Let every op under way end, issuing no new decision batch (bounded by the
        deadlines); at a stop, also apply the rewards still gathering."""
        limit = self.serve.decision_timeout_s + self.ctx.config.run.deadline_s
        end = time.monotonic() + limit
        while self.flights.busy or self.order.unlogged or (self.ready and not self.gathering):
            if time.monotonic() > end:
                raise PeerTimeout(" or ".join(self.holders), f"{DECIDE} (ops under way: "
                                  f"{self.flights.numbers()})", limit)
            if not self.pump(take_new=False):
                self.chan.wait_any(self.waiting_for(),
                                   WAIT_S if self.flights.batches else POLL_S)

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
