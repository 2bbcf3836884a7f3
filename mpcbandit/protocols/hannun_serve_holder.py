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
from collections import deque

import numpy as np

from mpcbandit.bodies import expect_field
from mpcbandit.data.hannun_data import feature_slices
from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Round
from mpcbandit.mpc.schedule import RoundScheduler
from mpcbandit.mpc.shares import AShare
from mpcbandit.protocols import hannun
from mpcbandit.protocols.hannun_batch import (DECIDE, UPDATE, decide, initial_state,
                                              share_contexts, update)
from mpcbandit.protocols.hannun_stream import ServedExploration
from mpcbandit.protocols.serve_loop import OPS, UP, Follower, ServeContext

__all__ = ["HAVE", "ContextStore", "run_holder"]

log = logging.getLogger("mpcbandit.serve")

HAVE = "serve.have"          # each holder tells the others and p' which slices it has
ROUNDS = "serve.rounds"      # the holders' merged rounds (every op's messages among them)
#: model versions a holder keeps: p' names the last it knows applied, one more may be done
KEEP_VERSIONS = 3
PULLER, REWARD, DEALER = (f"{role}.0" for role in (hannun.PULLER, hannun.REWARD, hannun.DEALER))
DEALER_LABEL = "dealer"      # the engine's requests to the dealer: the stream's words go along


class ContextStore:
    """A feature holder's slices by request id (thread-safe: the shell's queue feeds it from a
    thread of its own while the protocol's thread waits for slices)."""

    def __init__(self, port, lookup, width: int, *, consumed: int = 0,
                 pending: list[str] = (), expire_s: float = float("inf")):
        self.port, self.lookup, self.width, self.expire_s = port, lookup, width, expire_s
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
            batch = self.port.next_batch("contexts", wait_s=0.25)
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
        return np.asarray(rows, dtype=np.float64).reshape(len(ids), self.width)

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


def _expect_flags(body, count: int, peer: str) -> list[bool]:
    if not isinstance(body, list) or len(body) != count or not all(isinstance(b, bool)
                                                                    for b in body):
        raise ProtocolError(peer, HAVE, f"expected {count} bools (which slices it has), got "
                                        f"{str(body)[:80]}")
    return body


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
    earlier batches are under way, reading the model version p' names; the lead holder says
    in each round which of p''s ops the holders start after it."""

    def __init__(self, ctx: ServeContext, holders: list[str]):
        s = ctx.section
        self.ctx, self.s, self.chan, self.holders = ctx, s, ctx.chan, holders
        self.me = holders.index(ctx.name)
        self.others = [h for h in holders if h != ctx.name]
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
        #: the lead's ops read from p' and not started yet
        self.inbox: deque[dict] = deque()
        width = len(feature_slices(s)[self.me])
        lookup = ctx.source if hasattr(ctx.source, "features_of") else None  # a data folder
        self.store = ContextStore(ctx.port, lookup, width, **store,
                                  expire_s=ctx.config.serve.reward_timeout_s)
        ack = ((lambda first: self.chan.send(DEALER_LABEL, DEALER, {"explore_at": first}))
               if lead else None)
        if lead:
            self.chan.send(DEALER_LABEL, DEALER, {"explore_from": t})
        self.explore = ServedExploration(ctx.chan, DEALER, s, lead, t, ack)

    # ------------------------------------------------------------ which ops start when
    def startable(self, op: dict) -> bool:
        """The lead's rule, in a burst of rounds: whether op may start after this round (ops
        start in p''s order, so the first that may not holds back those behind it)."""
        kind = op["kind"]
        if kind == "prepare":
            ready = all(self.store.wait(op["ids"], 0.0)) or time.monotonic() >= op["_until"]
            return ready and _model(op, self.updates) <= self.updates
        if kind == "decide":
            return _model(op, self.updates) <= self.updates
        if kind == "update":   # once p' and p'' inputs are here: the round would wait for them
            return not self.updating and all(self.chan.arrived(UPDATE, p) for p in (PULLER, REWARD))
        return kind == "drop"   # checkpoint, live, stop: once every op has ended

    def read_ops(self) -> None:
        """The lead: take p''s ops that have arrived."""
        while self.chan.arrived(OPS, PULLER):
            op = self.follower.next_op(wait_s=0.0)
            if op is None:
                break
            if op["kind"] == "prepare":
                op["_until"] = time.monotonic() + self._wait_s(op)
            self.inbox.append(op)

    def _wait_s(self, op: dict) -> float:
        wait_s = op.get("wait_s")
        if isinstance(wait_s, bool) or not isinstance(wait_s, (int, float)) or wait_s < 0:
            raise ProtocolError(PULLER, f"{HAVE} op {op.get('n')}",
                                f"wait_s {wait_s!r} is not a duration")
        return float(wait_s)

    # ------------------------------------------------------------ the ops
    def prepare(self, op: dict) -> None:
        """Which of the batch's slices every holder has (each waits at most wait_s for its
        own; the lead starts the op once it has them), then the decision of those ids."""
        n = expect_field(op, "n", int, PULLER, f"{HAVE} op {op.get('n')}")
        ids = expect_field(op, "ids", list, PULLER, f"{HAVE} op {n}")
        until = op.get("_until", time.monotonic() + self._wait_s(op))
        have = self.store.wait(ids, max(0.0, until - time.monotonic()))
        model = _model(op, self.updates)

        def exchange():
            self.chan.send(HAVE, PULLER, have)
            got = yield Round({p: have for p in self.others}, tuple(self.others))
            return [have] + [_expect_flags(got[p], len(ids), p) for p in self.others]

        def prepared(flags, _running):
            complete = [i for k, i in enumerate(ids) if all(f[k] for f in flags)]
            if complete:
                self.decide(complete, n, model)

        self.sched.add(("prepare", n), HAVE, exchange(), prepared)

    def decide(self, ids: list[str], n: int, model: int) -> None:
        if model not in self.versions:
            raise ProtocolError(PULLER, f"serve.ops op {n}", f"a decision on model version "
                                f"{model}, this holder keeps {sorted(self.versions)}")
        mine = self.store.take(ids, n)
        gen = _share_and_decide(self.eng, self.holders, self.versions[model], mine, self.me,
                                self.explore.take(len(ids)), PULLER)

        def decided(xs, running):
            self.kept.update((i, xs[k]) for k, i in enumerate(ids))
            self.ctx.port.report_op("decide", running.rounds, running.bytes_sent)

        self.sched.add(("decide", n), DECIDE, gen, decided)

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

    def handle(self, op: dict) -> None:
        """Start or apply one of p''s ops ("stop" raises _Stopped)."""
        kind = op["kind"]
        ids = op.get("ids", [])
        if kind == "prepare":
            self.prepare(op)
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

    def round(self) -> list[dict]:
        """One merged round of the ops under way; the ops to start after it (the lead's, as
        it told the others)."""
        if self.eng.lead:
            self.read_ops()
            count = 0
            for op in self.inbox:
                if not self.startable(op):
                    break
                count += 1
            self.sched.step(count)
            return [self.inbox.popleft() for _ in range(count)]
        count = self.sched.step().get(self.holders[0])
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ProtocolError(self.holders[0], f"{ROUNDS} round {self.sched.rounds}",
                                f"expected how many ops start next, got {count!r:.40}")
        return [self.follower.next_op() for _ in range(count)]

    def next_op(self) -> dict:
        """Between bursts of rounds: the next op (the lead's read ones first)."""
        return self.inbox.popleft() if self.inbox else self.follower.next_op()


def run_holder(ctx: ServeContext, holders: list[str]) -> str | None:
    """A feature holder's serve loop; returns the party that stopped the service."""
    h = _Holder(ctx, holders)
    try:
        while True:
            for op in ([h.next_op()] if h.sched.idle else h.round()):
                h.handle(op)
    except _Stopped as stop:
        return stop.by
    finally:
        h.store.close()
