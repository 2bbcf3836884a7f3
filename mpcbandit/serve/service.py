"""What a party's API does with each request, apart from HTTP: checks it, logs it, queues it
for the backend and answers with a status and a JSON body (a Reply). It is also the backend's
port (mpcbandit/serve/backend.py): batches out, decisions and reports in.

Order of work for each kind (docs/serve.md says it to the user):
- a context: checked, its id claimed (409 if seen), a queue place reserved (429 if full),
  logged; once durable it joins the contexts queue, then 202;
- a decision: refused at once (503) while a peer is gone or the backend is not ready; else
  claimed, queued, and answered when the backend settles its ticket (the decision is logged
  before the 200) or after serve.decision_timeout_s (503 naming the missing holders);
- a reward: 409 if rewarded, 410 if its decision was closed, 404 if no decision for its id is
  known within serve.decision_timeout_s; else logged, queued, 202.

The checks every kind passes are admission.py's; a decision and a reward, which each wait on
the backend, are decisions.py's and rewards.py's.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from mpcbandit.config import ServeSection
from mpcbandit.serve.admission import DURABLE_DEADLINE_S, Admission
from mpcbandit.serve.backend import KINDS, Backend, BackendState
from mpcbandit.serve.batching import Batch, BatchQueue
from mpcbandit.serve.decisions import Decisions
from mpcbandit.serve.idbook import IdBook
from mpcbandit.serve.metrics import BACKEND_STAGES, ServeMetrics
from mpcbandit.serve.replies import Reply
from mpcbandit.serve.requests import parse_context
from mpcbandit.serve.rewards import Rewards
from mpcbandit.serve.wal import WriteAheadLog

__all__ = ["Service", "ServiceRole", "Reply", "DURABLE_DEADLINE_S"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServiceRole:
    """What this party's application may send: its feature count, decisions, rewards."""

    party: str
    features: int = 0
    decides: bool = False
    rewards: bool = False
    #: the most a context slice's Euclidean norm may be (None: unbounded)
    max_norm: float | None = None
    #: what a refused norm is told: what the bound is on and what to do (the protocol's words)
    norm_rule: str = ""
    #: the only rewards taken (empty: any finite number)
    reward_values: tuple[float, ...] = ()
    #: the largest magnitude of a context value or a reward (None: any finite number), so
    #: that no accepted request can overflow the protocol's model or its logs
    max_abs: float | None = None

    @property
    def kinds(self) -> list[str]:
        """The request kinds (queues) this party takes."""
        takes = {"contexts": self.features > 0, "decisions": self.decides,
                 "rewards": self.rewards}
        return [k for k in KINDS if takes[k]]


class Service:
    """One party's API behind HTTP, in front of its backend: its log, id book, queues and
    metrics, the requests open, its health, and the backend's port."""

    def __init__(self, serve: ServeSection, role: ServiceRole, backend: Backend, wal_path: Path):
        self.serve = serve
        self.role = role
        self.backend = backend
        self.wal = WriteAheadLog(wal_path)
        #: the log as read back at start, for the backend to replay
        self.records = self.wal.records
        self.book = IdBook(wal_path.with_suffix(".ids"), takes_rewards=role.rewards)
        self.book.replay(self.records)
        self.queues = {k: BatchQueue(k, serve.queue_limit) for k in role.kinds}
        self.metrics = ServeMetrics()
        self.state = BackendState()
        self.admission = Admission(serve, role.party, self.book, self.queues, self.wal)
        self.decisions = Decisions(serve, self.admission, backend, self.metrics,
                                   lambda: self.state)
        self.rewards = Rewards(serve, role.reward_values, self.admission, self.metrics,
                               role.max_abs)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._inflight = 0
        self._idle: asyncio.Event | None = None
        self._tasks: list[asyncio.Task] = []
        m = self.metrics
        m.watch(m.rewards_pending, lambda: self.book.rewards_pending)
        m.watch(m.wal_fsyncs, lambda: self.wal.fsyncs)
        m.watch(m.wal_records, lambda: self.wal.appended)
        for kind, queue in self.queues.items():
            m.queue_depth.labels(kind).set_function(lambda q=queue: q.depth)

    async def start(self) -> None:
        """Start the backend (and the reward sweeper of a party that takes rewards)."""
        self.loop = asyncio.get_running_loop()
        self._idle = asyncio.Event()
        self._idle.set()
        self.backend.start(self)
        if self.role.rewards:
            self._tasks.append(asyncio.create_task(self.rewards.close_overdue()))

    # ------------------------------------------------------------ the backend's port

    def next_batch(self, kind: str, max_items: int | None = None, window_s: float | None = None,
                   wait_s: float = 1.0, *, patient: bool = True) -> Batch | None:
        """The next batch of kind, in arrival order (see batching.py)."""
        batch = self.queues[kind].next_batch(max_items or self.serve.max_batch,
                                             self.serve.batch_ms / 1e3 if window_s is None
                                             else window_s, wait_s, patient=patient)
        if batch is not None:
            self.metrics.observe_batch(kind, batch.items)
            log.info("batch %s #%d: %d request(s), the first waited %.1f ms, %d still queued",
                     kind, batch.number, len(batch.items), 1e3 * batch.waited_s,
                     self.queues[kind].depth)
        return batch

    def drained(self, kind: str) -> bool:
        """Whether the queue of kind is closed and empty."""
        return self.queues[kind].drained

    def report(self, *, ready: bool | None = None, step: int | None = None,
               peers: dict[str, str] | None = None, reason: str | None = None) -> None:
        """The backend's new state (given fields only); a gone peer fails open decisions."""
        old = self.state
        self.state = BackendState(old.ready if ready is None else ready,
                                  old.step if step is None else step,
                                  dict(old.peers if peers is None else peers),
                                  old.reason if reason is None else reason)
        newly_gone = sorted(set(self.state.gone) - set(old.gone))
        if newly_gone:
            names = ", ".join(newly_gone)
            log.error("peer(s) %s gone: decisions fail with 503 (%s)", names,
                      self.state.reason or "no reason given")
            self.decisions.refuse_open(f"peer(s) {names} gone")

    def report_op(self, op: str, rounds: int, bytes_sent: int) -> None:
        """Count one op's rounds and bytes."""
        self.metrics.report_op(op, rounds, bytes_sent)

    def report_stage(self, stage: str, seconds: float, count: int = 1) -> None:
        """Count decisions' time in one of the backend's stages."""
        self.metrics.report_stage(stage, seconds, count, stages=BACKEND_STAGES)

    def record_decision(self, rid: str, arm: int, step: int) -> None:
        """A decision made with no request waiting (replayed at a resume): logged, id taken."""
        self.decisions.record_replayed(rid, arm, step)

    def decided(self, ids: list[str]) -> None:
        """These ids were decided elsewhere: rewards for them are accepted from now on."""
        if self.role.rewards:
            self.rewards.decided(ids, self.loop)

    # ------------------------------------------------------------ the API

    @contextmanager
    def _request(self):
        self._inflight += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._idle.set()

    async def post_context(self, raw: bytes) -> Reply:
        """POST /v1/contexts: 202 once the context is logged and queued."""
        with self._request():
            req = self.admission.admit("contexts", "contexts (it is no feature holder)", raw,
                                       lambda b: parse_context(b, self.role.features,
                                                               self.role.max_norm,
                                                               self.role.norm_rule,
                                                               max_abs=self.role.max_abs),
                                       self.book.contexts, "a context")
            if isinstance(req, Reply):
                return req
            queue = self.queues["contexts"]
            record = {"kind": "context", "id": req.id, "features": req.features,
                      "at": time.time()}
            fut = self.wal.append(record, then=lambda _r: queue.put(req))
            failed = await self.admission.durable(fut, lambda: (
                queue.release(), self.book.forget(self.book.contexts, req.id)))
            if failed:
                return failed
            self.metrics.contexts.inc()
            return Reply(202, {"id": req.id})

    async def post_decision(self, raw: bytes) -> Reply:
        """POST /v1/decisions: 200 with the arm once decided and logged, else 503."""
        with self._request():
            return await self.decisions.post(raw)

    async def post_reward(self, raw: bytes) -> Reply:
        """POST /v1/rewards: 202 once the reward is logged and queued."""
        with self._request():
            return await self.rewards.post(raw)

    def health(self) -> Reply:
        """GET /v1/health: ready, the peers as the backend reported them, the model's step."""
        state = self.state
        why = ""
        if self.admission.draining:
            why = "stopping (SIGTERM)"
        elif self.wal.broken is not None:
            why = str(self.wal.broken)
        elif state.gone:
            why = f"peer(s) {', '.join(state.gone)} gone"
        elif not state.ready:
            why = state.reason or "waiting for the backend (peers' hello)"
        body = {"ready": not why, "peers": state.peers, "step": state.step}
        if why:
            body["reason"] = why
        return Reply(200, body)

    async def drain(self, deadline_s: float) -> None:
        """SIGTERM: refuse new requests, let the backend finish what is queued, close the log."""
        self.admission.draining = True
        for queue in self.queues.values():
            queue.close()
        for task in self._tasks:
            task.cancel()
        end = self.loop.time() + deadline_s
        try:
            await asyncio.wait_for(self._idle.wait(), deadline_s)
        except asyncio.TimeoutError:
            log.error("drain: %d request(s) still open after %g s", self._inflight, deadline_s)
        left = max(0.1, end - self.loop.time())
        await self.loop.run_in_executor(None, self.backend.stop, left)
        self.wal.close()
