"""A feature holder of Hannun's service (docs/serve.md): its slices of the requests' contexts
by id, and its loop: it follows p''s ops, answers which slices it has, decides batches with the
other holders, keeps each decision's [x] until p' says its reward (or its closing) is applied.

A slice comes from the holder's own API (read back from its log at a restart, then taken
from the shell's queue in the log's order) or, failing that, from its data folder (docs/data.md:
``features.*`` looked up by id). A slice is dropped once its decision was made; one whose
decision is never asked for is dropped after serve.reward_timeout_s.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time

import numpy as np

from mpcbandit.bodies import expect_field
from mpcbandit.data.hannun_data import feature_slices
from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.shares import AShare
from mpcbandit.protocols import hannun
from mpcbandit.protocols.hannun_batch import (DECIDE, UPDATE, decide, initial_state,
                                              share_contexts, update)
from mpcbandit.protocols.hannun_stream import ServedExploration
from mpcbandit.protocols.serve_loop import Follower, ServeContext

__all__ = ["HAVE", "ContextStore", "run_holder"]

log = logging.getLogger("mpcbandit.serve")

HAVE = "serve.have"          # each holder tells the others and p' which slices it has
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


class _Holder:
    """One feature holder's state and its answers to each op."""

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
            self.state = initial_state(self.eng, s.arms, s.dims, s.regularizer)
            self.kept: dict[str, AShare] = {}
            t, store = 0, {}
        else:
            self.state = {k: AShare.from_state(v, lead) for k, v in saved["shares"].items()}
            rows = AShare.from_state(saved["kept"], lead) if saved["kept_ids"] else None
            self.kept = {i: rows[k] for k, i in enumerate(saved["kept_ids"])}
            t, store = saved["t"], saved["store"]
        width = len(feature_slices(s)[self.me])
        lookup = ctx.source if hasattr(ctx.source, "features_of") else None  # a data folder
        self.store = ContextStore(ctx.port, lookup, width, **store,
                                  expire_s=ctx.config.serve.reward_timeout_s)
        ack = ((lambda first: self.chan.send(DEALER_LABEL, DEALER, {"explore_at": first}))
               if lead else None)
        if lead:
            self.chan.send(DEALER_LABEL, DEALER, {"explore_from": t})
        self.explore = ServedExploration(ctx.chan, DEALER, s, lead, t, ack)

    def prepare(self, op: dict) -> None:
        """Which of the batch's slices every holder has (each waits at most wait_s for its
        own), then the decision of those ids (the op number p' gave)."""
        tag = f"{HAVE} op {op.get('op')}"
        ids = expect_field(op, "ids", list, PULLER, tag)
        wait_s = op.get("wait_s")
        if isinstance(wait_s, bool) or not isinstance(wait_s, (int, float)) or wait_s < 0:
            raise ProtocolError(PULLER, tag, f"wait_s {wait_s!r} is not a duration")
        have = self.store.wait(ids, wait_s)
        got = self.chan.exchange(HAVE, send={p: have for p in self.others + [PULLER]},
                                 recv=self.others,
                                 deadline_s=wait_s + self.ctx.config.run.deadline_s)
        flags = [have] + [_expect_flags(got[p], len(ids), p) for p in self.others]
        complete = [i for k, i in enumerate(ids) if all(f[k] for f in flags)]
        if not complete:
            return
        n = expect_field(op, "op", int, PULLER, tag)
        if n != self.follower.n + 1:
            raise ProtocolError(PULLER, tag, f"op {n} after op {self.follower.n}")
        self.follower.n = n
        self.decide(complete, n)

    def _run(self, kind: str, op: Op):
        """Run an op of the service and report its rounds and bytes (/metrics; the dealer's
        material, fetched ahead, is not the op's)."""
        before = dataclasses.replace(self.chan.stats.op(op.label))
        out = self.eng.run(op)
        cost = self.chan.stats.op(op.label) - before
        self.ctx.port.report_op(kind, cost.rounds, cost.bytes_sent)
        return out

    def decide(self, ids: list[str], n: int) -> None:
        mine = self.store.take(ids, n)
        xs = self._run("decide", Op(DECIDE, _share_and_decide(
            self.eng, self.holders, self.state, mine, self.me, self.explore.take(len(ids)),
            PULLER)))
        self.kept.update((i, xs[k]) for k, i in enumerate(ids))

    def update(self, ids: list[str], n: int) -> None:
        missing = [i for i in ids if i not in self.kept]
        if missing:
            raise ProtocolError(PULLER, f"serve.ops op {n}", f"a reward for id {missing[0]!r}, "
                                "which this holder has no decision of")
        xs = AShare.stack([self.kept.pop(i) for i in ids])
        self._run("update", Op(UPDATE, update(self.eng, self.state, xs, PULLER, REWARD)))

    def checkpoint(self, n: int) -> None:
        ids = list(self.kept)
        self.ctx.state.save(n, {
            "t": self.explore.t, "store": self.store.snapshot(),
            "shares": {k: v.to_state() for k, v in self.state.items()},
            "kept_ids": ids, "kept": AShare.stack([self.kept[i] for i in ids]).to_state()
            if ids else None})
        self.follower.saved(n)


def run_holder(ctx: ServeContext, holders: list[str]) -> str | None:
    """A feature holder's serve loop; returns the party that stopped the service."""
    h = _Holder(ctx, holders)
    try:
        while True:
            op = h.follower.next_op()
            kind = op["kind"]
            ids = op.get("ids", [])
            if kind == "prepare":
                h.prepare(op)
            elif kind == "decide":        # replayed at a resume: the ids are the log's
                h.decide(ids, op["n"])
            elif kind == "update":
                h.update(ids, op["n"])
            elif kind == "drop":          # closed without a reward: nothing to apply
                for i in ids:
                    h.kept.pop(i, None)
            elif kind == "checkpoint":
                h.checkpoint(expect_field(op, "n", int, PULLER, "serve.ops checkpoint"))
            elif kind == "live":
                ctx.port.report(ready=True, reason="")
            elif kind == "stop":
                if h.eng.lead:
                    h.chan.send(DEALER_LABEL, DEALER, {"explore_stop": h.explore.t,
                                                       "by": op.get("by")})
                h.eng.close()
                return op.get("by")
            else:
                raise ProtocolError(PULLER, "serve.ops", f"unknown op {kind!r}")
            ctx.port.report(step=h.follower.n)
    finally:
        h.store.close()
