"""The leader of a service (docs/serve.md, "How the parties sequence a batch"), whatever the
protocol: the party that numbers every op, logs it before its result is known, has every party
checkpoint together, and runs the loop that takes decision batches from its queue and applies
rewards after each. Hannun's p' (protocols/hannun/serve.py) and O3M's AP (protocols/o3m/serve.py) are leaders; a
protocol gives ``prepare`` (a decision batch), ``decide`` / ``update`` / ``drop`` (an op, live
or replayed at a resume) and ``state`` (its checkpoint).
"""

from __future__ import annotations

import logging
import time

from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.serve.loop import OPS, UP, OpLog, ServeContext, agree_resume, tick_s
from mpcbandit.serve.rewards_gathering import RewardsGathering

__all__ = ["Leader"]

log = logging.getLogger("mpcbandit.serve")


class Leader(RewardsGathering):
    """A leader's op log, its followers' words, the ops' costs, checkpoints and its loop
    (the rewards it holds until an update: RewardsGathering)."""

    def __init__(self, ctx: ServeContext, followers: list[str], listen: list[str]):
        """followers: the parties it orders; listen: those whose words (UP) it reads."""
        super().__init__(ctx.config.serve)
        self.ctx, self.chan, self.port = ctx, ctx.chan, ctx.port
        self.followers, self.listen = followers, listen
        self.oplog = OpLog(ctx.state.oplog_path)
        #: the arms logged of the decisions a resume replays (filled by ``agree``)
        self.logged: dict[str, int] = {}
        #: the op being replayed (its record as logged)
        self.replayed: dict = {}
        self.leaving: str | None = None
        self.acks: set[tuple[str, int]] = set()
        self.last_checkpoint, self.replaying = 0, True
        self._idle_since = time.monotonic()   # the last turn that moved something (idle_tick)

    def agree(self) -> int:
        """Where the service resumes (the last op every party checkpointed; 0: afresh)."""
        self.last_checkpoint = agree_resume(self.ctx, self.followers, self.oplog.n)
        replayed = {i for op in self.oplog.logged_after(self.last_checkpoint)
                    if op["kind"] == "decide" for i in op["ids"]}
        self.logged = {r["id"]: r["arm"] for r in self.port.records
                       if r.get("kind") == "decision" and r["id"] in replayed}
        return self.last_checkpoint

    def replay(self, start: int, awaiting) -> None:
        """Replay the op log after op `start`, then tell the followers the service is live;
        awaiting() counts the decisions awaiting their reward."""
        for op in self.oplog.logged_after(start):
            self.replayed = op
            {"decide": self.decide, "update": self.update, "drop": self.drop}[op["kind"]](
                op["ids"], op["n"])
        self.replaying, self.logged, self.replayed = False, {}, {}
        for f in self.followers:
            self.chan.send(OPS, f, {"kind": "live"})
        self.port.report(ready=True, step=self.oplog.n, reason="")
        log.info("serving from op %d (%d replayed), %d decisions awaiting their reward",
                 self.oplog.n, self.oplog.n - start, awaiting())

    # ------------------------------------------------------------ what a protocol gives
    def prepare(self, batch) -> None:
        raise NotImplementedError

    def decide(self, ids: list[str], n: int, tickets=None) -> None:
        raise NotImplementedError

    def update(self, ids: list[str], n: int) -> None:
        raise NotImplementedError

    def drop(self, ids: list[str], n: int) -> None:
        raise NotImplementedError

    def state(self) -> dict:
        """What this party checkpoints."""
        raise NotImplementedError

    def hear(self, peer: str, msg: dict) -> None:
        """A follower's word beyond leaving and checkpoints (Hannun's p'': rewards ready)."""

    def take_rewards(self) -> None:
        """Rewards this party's own queue holds (O3M's AP takes them itself)."""

    def settle(self) -> None:
        """At a stop, after the last decision batches: what must be applied before the last
        checkpoint."""

    # ------------------------------------------------------------ the followers
    def on_up(self, peer: str, msg) -> None:
        if not isinstance(msg, dict):
            raise ProtocolError(peer, UP, f"expected a dict, got {str(msg)[:60]}")
        self.hear(peer, msg)
        if "leave" in msg and self.leaving is None:
            self.leaving = peer
            log.info("%s leaves (%s): finishing the open batches, then stopping", peer,
                     msg["leave"])
        if "saved" in msg:
            self.acks.add((peer, msg["saved"]))

    def read_up(self) -> None:
        while (got := self.chan.poll(UP, self.listen, 0.0)) is not None:
            self.on_up(*got)

    # ------------------------------------------------------------ ops
    def settle_decisions(self, ids: list[str], arms: list[int], n: int, tickets) -> None:
        """Answer each ticket with its arm; replayed (no tickets), log a decision never
        answered before the crash, and refuse an arm that differs from the log's."""
        for k, (rid, arm) in enumerate(zip(ids, arms)):
            if tickets is not None:
                tickets[k].decide(arm, n)
            elif rid not in self.logged:  # decided before a crash, never answered: logged now
                self.port.record_decision(rid, arm, n)
            elif self.logged[rid] != arm:
                raise DataError(f"op {n} replayed: id {rid!r} got arm {arm}, the log of "
                                f"{self.ctx.name} says {self.logged[rid]}: the replay differs")

    def slices_wait(self, batch) -> float:
        """How long the parties may wait for a batch's slices: what is left of
        serve.decision_timeout_s, less a margin (a tenth, at most 0.25 s) for the refusal
        naming the missing holders to reach the shell before the request times out."""
        timeout = self.serve.decision_timeout_s
        return max(0.0, timeout - batch.waited_s - min(0.25, 0.1 * timeout))

    def refuse(self, ticket, missing: list[str], what: str) -> None:
        """Refuse a decision whose inputs from `missing` did not arrive in time."""
        self.ctx.backend.note_refused(ticket.id, missing)
        ticket.refuse(f"the {what} of {', '.join(missing)} did not arrive within "
                      f"serve.decision_timeout_s = {self.serve.decision_timeout_s:g} s", missing)

    def op_done(self, n: int, kind: str, count: int, before, t0: float, *,
                checkpoint: bool = True) -> None:
        """Report op n's cost (rounds and bytes since `before`), log it, checkpoint if due
        (a leader with ops under way checkpoints once they have ended: checkpoint=False)."""
        cost = self.chan.stats.total() - before
        self.port.report(step=n)
        self.port.report_op(kind, cost.rounds, cost.bytes_sent)
        log.info("op %d %s: %d id(s), %d round(s), %.1f ms", n, kind, count, cost.rounds,
                 1e3 * (time.perf_counter() - t0))
        if checkpoint and not self.replaying and n % self.serve.checkpoint_every == 0:
            self.checkpoint(n)

    def checkpoint(self, n: int) -> None:
        """Every party saves its state after op n; the leader waits until each has."""
        for p in self.followers:
            self.chan.send(OPS, p, {"kind": "checkpoint", "n": n})
        self.ctx.state.save(n, self.state())
        while any((p, n) not in self.acks for p in self.followers):
            self.on_up(*self.chan.receive_any(UP, self.listen))
        self.acks = {a for a in self.acks if a[1] > n}
        self.last_checkpoint = n

    # ------------------------------------------------------------ the loop
    def op_number(self, kind: str, ids: list[str] | None = None, **extra) -> int:
        """The number of the op about to be issued (a leader with ops under way at once
        numbers them as it issues them)."""
        return self.oplog.n + 1

    def pending_rewards(self, may_update: bool = True) -> bool:
        """Closings (no MPC) and, if may_update and they are due (rewards_wait), one batch of
        rewards, in the order they came; whether any."""
        worked = False
        if self.closing:
            ids = self.take_closing()
            self.drop(ids, self.op_number("drop", ids))
            worked = True
        if may_update and (ids := self.take_due()):
            self.update(ids, self.op_number("update", ids))
            worked = True
        return worked

    def idle_tick(self, worked: bool) -> None:
        """After a turn of the loop: a tick to the followers once nothing moved for a tick's
        time (their logs and health see the leader alive)."""
        now = time.monotonic()
        if worked:
            self._idle_since = now
        elif now - self._idle_since > tick_s(self.ctx.config):
            for p in self.followers:
                self.chan.send(OPS, p, {"kind": "tick"})
            self._idle_since = now

    def run(self) -> str | None:
        """Decision batches and, after each, one batch of rewards, until a stop; the party
        that stopped the service (None: this one)."""
        while not (self.leaving or self.ctx.stopping):
            self.read_up()
            self.take_rewards()
            batch = self.port.next_batch("decisions", wait_s=self.queue_wait())
            if batch is not None:
                self.prepare(batch)
            self.idle_tick(self.pending_rewards() or batch is not None)
        return self.stop()

    def stop(self) -> str | None:
        """Finish the batches already queued (for at most serve.decision_timeout_s: a queue
        that others keep filling), checkpoint, tell everyone who stopped."""
        self.gathering = False
        end = time.monotonic() + self.serve.decision_timeout_s
        while time.monotonic() < end and (batch := self.port.next_batch(
                "decisions", window_s=0.0, wait_s=0.0)):
            self.prepare(batch)
        self.settle()
        if self.last_checkpoint != self.oplog.n:
            self.checkpoint(self.oplog.n)
        by = self.leaving or self.ctx.name
        for p in self.followers:
            self.chan.send(OPS, p, {"kind": "stop", "by": by})
        self.oplog.close()
        log.info("stopped at op %d (%s stopped)", self.oplog.n, by)
        return self.leaving
