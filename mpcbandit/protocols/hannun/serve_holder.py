"""A feature holder of Hannun's service (docs/serve.md): its slices of the requests' contexts
by id, and its loop: it follows p''s ops, answers which slices it has, decides batches with the
other holders, keeps each decision's [x] until p' says its reward (or its closing) is applied.

A slice comes from the holder's own API (read back from its log at a restart, then taken
from the shell's queue in the log's order) or, failing that, from its data folder (docs/data.md:
``features.*`` looked up by id). A slice is dropped once its decision was made; one whose
decision is never asked for is dropped after serve.reward_timeout_s.
"""

from __future__ import annotations

import logging
import threading
import time

import numpy as np

from mpcbandit.bodies import expect_field
from mpcbandit.data.hannun_data import feature_slices, service_factor
from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.schedule import RoundScheduler
from mpcbandit.mpc.shares import AShare
from mpcbandit.protocols.hannun import protocol as hannun
from mpcbandit.protocols.hannun.ops import (DECIDE, UPDATE, decide, initial_state,
                                              share_contexts, update)
from mpcbandit.protocols.hannun.serve_holder_queue import HAVE, OpQueue, Pending
from mpcbandit.protocols.hannun.stream import ServedExploration
from mpcbandit.serve.loop import UP, Follower, ServeContext

__all__ = ["ContextStore", "run_holder"]

log = logging.getLogger("mpcbandit.serve")

ROUNDS = "serve.rounds"      # the holders' merged rounds (every op's messages among them)
#: model versions a holder keeps: p' names the last it knows applied, one more may be done
KEEP_VERSIONS = 3
#: the lead holder tells p' how many batches fit in a round every this many rounds
FIT_EVERY = 32
PULLER, REWARD, DEALER = (f"{role}.0" for role in (hannun.PULLER, hannun.REWARD, hannun.DEALER))
DEALER_LABEL = "dealer"      # the engine's requests to the dealer: the stream's words go along


class ContextStore:
    """A feature holder's slices by request id (thread-safe: the shell's queue feeds it from a
    thread of its own while the protocol's thread waits for slices)."""

    def __init__(self, port, lookup, width: int, *, consumed: int = 0,
                 pending: list[str] = (), expire_s: float = float("inf"), factor: float = 1.0):
        self.port, self.lookup, self.width, self.expire_s = port, lookup, width, expire_s
        #: hannun_data.service_factor: every slice, posted or looked up, is multiplied by it
        #: as it is taken (the log keeps what the application posted; serve-replay does alike)
        self.factor = factor
        self._cond = threading.Condition()
        self.slices: dict[str, tuple[np.ndarray, float]] = {}
        keep = set(pending)
        #: context records of the log taken in, in the log's order
        self.consumed = 0
        for r in port.records:   # those taken in before the checkpoint and not used, and after
            if r.get("kind") != "context":
                continue
            if self.consumed >= consumed or r["id"] in keep:
                self.slices[r["id"]] = (np.asarray(r["features"], dtype=np.float64),
                                        float(r.get("at", time.time())))
            self.consumed += 1
        self._closed = False
        self._thread = threading.Thread(target=self._intake, name="contexts intake", daemon=True)
        self._thread.start()

    def _intake(self) -> None:
        while not self._closed and not self.port.drained("contexts"):
            # no window: a slice is only stored, and a decision may be waiting for it
            batch = self.port.next_batch("contexts", window_s=0.0, wait_s=0.25)
            if batch is None:
                continue
            now = time.time()
            with self._cond:
                for req in batch.items:
                    self.slices[req.id] = (np.asarray(req.features, dtype=np.float64), now)
                self.consumed += len(batch.items)
                self._cond.notify_all()

    def _has(self, rid: str) -> bool:
        return rid in self.slices or (self.lookup is not None
                                      and self.lookup.features_of(rid) is not None)

    def wait(self, ids: list[str], wait_s: float) -> list[bool]:
        """Whether this holder has each id's slice, waiting up to wait_s for the missing."""
        end = time.monotonic() + wait_s
        with self._cond:
            while True:
                have = [self._has(i) for i in ids]
                left = end - time.monotonic()
                if all(have) or left <= 0:
                    return have
                self._cond.wait(left)

    def take(self, ids: list[str], op: int) -> np.ndarray:
        """The slices of ids (B, D_i), dropped from the store (a replayed op must find them)."""
        rows = []
        with self._cond:
            for rid in ids:
                got = self.slices.pop(rid, None)
                row = got[0] if got is not None else (
                    self.lookup.features_of(rid) if self.lookup is not None else None)
                if row is None:
                    raise DataError(f"op {op}: no context slice for id {rid!r} (not in the "
                                    "log nor the data folder): cannot decide it")
                rows.append(row)
        rows = np.asarray(rows, dtype=np.float64).reshape(len(ids), self.width)
        return rows if self.factor == 1.0 else rows * self.factor

    def snapshot(self) -> dict:
        """What a checkpoint keeps of the store: how many records were taken in, and the ids
        among them not decided yet (their slices are read back from the log); slices older
        than expire_s are dropped first."""
        old = time.time() - self.expire_s
        with self._cond:
            for rid in [r for r, (_, at) in self.slices.items() if at < old]:
                del self.slices[rid]
            return {"consumed": self.consumed, "pending": list(self.slices)}

    def close(self) -> None:
        self._closed = True
        self._thread.join(1.0)


class _Stopped(Exception):
    """p' stopped the service (by: the party that stopped it)."""

    def __init__(self, by: str | None):
        super().__init__(by)
        self.by = by


def _share_and_decide(eng, holders, state, mine, me, explore, puller):
    xs = yield from share_contexts(eng, holders, mine, me)
    yield from decide(eng, state, xs, explore, puller)
    return xs


def _model(op: dict, latest: int) -> int:
    """The model version (updates applied) a decision batch reads: p' names it; a log from
    before versions were named reads the latest."""
    model = op.get("model", latest)
    if isinstance(model, bool) or not isinstance(model, int) or model < 0:
        raise ProtocolError(PULLER, f"serve.ops op {op.get('n')}", f"model {model!r} is not a "
                            "version")
    return model


class _Holder:
    """One feature holder's state and its answers to each op. The holders run their ops in
    merged rounds (mpcbandit/mpc/schedule.py): a decision batch starts while an update or
    earlier batches are under way, reading the model version p' names; an op starts once
    every holder said it is ready for it (its OpQueue, serve_holder_queue.py)."""

    def __init__(self, ctx: ServeContext, holders: list[str]):
        s = ctx.section
        self.ctx, self.s, self.chan, self.holders = ctx, s, ctx.chan, holders
        self.me = holders.index(ctx.name)
        # batches of every size: material fetched for the sizes that come (MaterialSupply)
        self.eng = Engine(ctx.chan, holders, dealer=DEALER, frac_bits=s.precision_bits,
                          trunc=s.trunc, batch_first_use=False)
        self.follower = Follower(ctx, PULLER)
        start, _ = self.follower.join()
        saved = ctx.state.load(start) if start else None
        lead = self.eng.lead
        if saved is None:
            state = initial_state(self.eng, s.arms, s.dims, s.regularizer)
            self.kept: dict[str, AShare] = {}
            t, store, self.updates = 0, {}, 0
        else:
            state = {k: AShare.from_state(v, lead) for k, v in saved["shares"].items()}
            rows = AShare.from_state(saved["kept"], lead) if saved["kept_ids"] else None
            self.kept = {i: rows[k] for k, i in enumerate(saved["kept_ids"])}
            t, store, self.updates = saved["t"], saved["store"], saved.get("updates", 0)
        #: the model after each of the last updates: a batch reads the version p' names
        self.versions = {self.updates: state}
        self.updating = False
        self.sched = RoundScheduler(ctx.chan, ROUNDS, holders, ctx.name)
        self.sched.probe_delay(holders[0])   # for the fit the lead reports (report_fit)
        width = len(feature_slices(s)[self.me])
        lookup = ctx.source if hasattr(ctx.source, "features_of") else None  # a data folder
        self.store = ContextStore(ctx.port, lookup, width, **store,
                                  expire_s=ctx.config.serve.reward_timeout_s,
                                  factor=service_factor(s))
        self.queue = OpQueue(ctx.chan, self.follower, self.store, holders, ctx.name,
                             [PULLER, REWARD])
        ack = ((lambda first: self.chan.send(DEALER_LABEL, DEALER, {"explore_at": first}))
               if lead else None)
        if lead:
            self.chan.send(DEALER_LABEL, DEALER, {"explore_from": t})
        self.explore = ServedExploration(ctx.chan, DEALER, s, lead, t, ack)
        #: hannun.reveal = "every": the dealer reveals a key once its decisions are decided,
        #: which the lead tells it each time that frontier passes a multiple of reveal_every
        self.reveal_every = (s.reveal_every if lead and s.exploration == "secret"
                             and s.reveal == "every" else 0)
        self.deciding: dict[int, int] = {}   # op n -> the first decision of its batch
        self.told = t

    # ------------------------------------------------------------ which ops start when
    def may_start(self, op: dict) -> bool:
        """What every holder knows alike: an update once the last has ended, a batch once the
        version it reads exists, a checkpoint or a stop with nothing under way."""
        kind = op["kind"]
        if kind == "update":
            return not self.updating
        if kind in ("prepare", "decide"):
            return _model(op, self.updates) <= self.updates
        return kind == "drop" or self.sched.idle

    # ------------------------------------------------------------ the ops
    def prepare(self, p: Pending) -> None:
        """The ids every holder has a slice of (their words) are decided in one batch."""
        n = expect_field(p.op, "n", int, PULLER, f"{HAVE} op {p.op.get('n')}")
        flags = [p.ready[h] for h in self.holders]
        complete = [i for k, i in enumerate(p.op["ids"]) if all(f[k] for f in flags)]
        if complete:
            self.decide(complete, n, _model(p.op, self.updates))

    def decide(self, ids: list[str], n: int, model: int) -> None:
        if model not in self.versions:
            raise ProtocolError(PULLER, f"serve.ops op {n}", f"a decision on model version "
                                f"{model}, this holder keeps {sorted(self.versions)}")
        mine = self.store.take(ids, n)
        self.deciding[n] = self.explore.t
        gen = _share_and_decide(self.eng, self.holders, self.versions[model], mine, self.me,
                                self.explore.take(len(ids)), PULLER)

        def decided(xs, running):
            self.kept.update((i, xs[k]) for k, i in enumerate(ids))
            self.ctx.port.report_op("decide", running.rounds, running.bytes_sent)
            del self.deciding[n]
            self.tell_decided()

        self.sched.add(("decide", n), DECIDE, gen, decided)

    def tell_decided(self) -> None:
        """The lead tells the dealer how far every decision is decided (batches run side by
        side: up to the first of those under way), when that passes a multiple of
        reveal_every (hannun.reveal = "every": the key before it can be revealed)."""
        if not self.reveal_every:
            return
        done = min(self.deciding.values(), default=self.explore.t)
        if done // self.reveal_every > self.told // self.reveal_every:
            self.chan.send(DEALER_LABEL, DEALER, {"explore_decided": done})
        self.told = max(self.told, done)

    def update(self, ids: list[str], n: int) -> None:
        missing = [i for i in ids if i not in self.kept]
        if missing:
            raise ProtocolError(PULLER, f"serve.ops op {n}", f"a reward for id {missing[0]!r}, "
                                "which this holder has no decision of")
        xs = AShare.stack([self.kept.pop(i) for i in ids])
        new = dict(self.versions[self.updates])   # update() replaces its entries at its end
        self.updating = True

        def updated(_, running):
            self.updates += 1
            self.versions[self.updates] = new
            for old in [v for v in self.versions if v <= self.updates - KEEP_VERSIONS]:
                del self.versions[old]
            self.updating = False
            self.ctx.port.report_op("update", running.rounds, running.bytes_sent)
            if self.eng.lead:
                self.chan.send(UP, PULLER, {"updated": self.updates, "n": n})

        self.sched.add(("update", n), UPDATE, update(self.eng, new, xs, PULLER, REWARD), updated)

    def checkpoint(self, n: int) -> None:
        if not self.sched.idle:
            raise ProtocolError(PULLER, "serve.ops checkpoint", f"a checkpoint at op {n} while "
                                "ops are under way")
        self.versions = {self.updates: self.versions[self.updates]}
        ids = list(self.kept)
        self.ctx.state.save(n, {
            "t": self.explore.t, "store": self.store.snapshot(), "updates": self.updates,
            "shares": {k: v.to_state() for k, v in self.versions[self.updates].items()},
            "kept_ids": ids, "kept": AShare.stack([self.kept[i] for i in ids]).to_state()
            if ids else None})
        self.follower.saved(n)

    def handle(self, p: Pending) -> None:
        """Start or apply one of p''s ops ("stop" raises _Stopped)."""
        op = p.op
        kind = op["kind"]
        ids = op.get("ids", [])
        if kind == "prepare":
            self.prepare(p)
        elif kind == "decide":        # replayed at a resume: the ids are the log's
            self.decide(ids, op["n"], _model(op, self.updates))
        elif kind == "update":
            self.update(ids, op["n"])
        elif kind == "drop":          # closed without a reward: nothing to apply
            for i in ids:
                self.kept.pop(i, None)
        elif kind == "checkpoint":
            self.checkpoint(expect_field(op, "n", int, PULLER, "serve.ops checkpoint"))
        elif kind == "live":
            self.ctx.port.report(ready=True, reason="")
        elif kind == "stop":
            if not self.sched.idle:
                raise ProtocolError(PULLER, "serve.ops stop", "a stop while ops are under way")
            if self.eng.lead:
                self.chan.send(DEALER_LABEL, DEALER, {"explore_stop": self.explore.t,
                                                      "by": op.get("by")})
            self.eng.close()
            raise _Stopped(op.get("by"))
        else:
            raise ProtocolError(PULLER, "serve.ops", f"unknown op {kind!r}")
        self.ctx.port.report(step=self.follower.n)

    def report_fit(self) -> None:
        """The lead tells p' every FIT_EVERY rounds how many batches fit in a round and how
        long a round takes (RoundScheduler.fit, round_time)."""
        if not self.eng.lead or self.sched.rounds % FIT_EVERY:
            return
        fit = self.sched.fit()
        if fit is not None:
            self.chan.send(UP, PULLER, {"fit": fit, "round_s": self.sched.round_time()})

    def step(self) -> None:
        """Between bursts of rounds the first op starts at once, unless it is a prepare
        (every holder is at the same point, with the same first op); otherwise a round of the
        ops under way carrying each holder's words on the ops it read (with nothing under way,
        the first prepare's word is waited for)."""
        queue = self.queue
        if self.sched.idle:
            if not queue.pending:
                queue.read_op(wait=True)
            if queue.pending[0].op["kind"] != "prepare":
                self.handle(queue.pending.popleft())
                return
        while queue.read_op():
            pass
        headers = self.sched.step(queue.announce(block=self.sched.idle))
        queue.hear(headers, f"{ROUNDS} round {self.sched.rounds}")
        for p in queue.ready(self.may_start):
            self.handle(p)
        self.report_fit()


def run_holder(ctx: ServeContext, holders: list[str]) -> str | None:
    """A feature holder's serve loop; returns the party that stopped the service."""
    h = _Holder(ctx, holders)
    try:
        while True:
            h.step()
    except _Stopped as stop:
        return stop.by
    finally:
        h.store.close()
