"""A party's reward requests (service.py says the order of work): 409 if rewarded, 410 if its
decision was closed, 404 if no decision for its id is known within serve.decision_timeout_s;
else logged, queued, 202. A decision whose reward does not come within
serve.reward_timeout_s is closed, and the closing handed to the backend like a reward."""

from __future__ import annotations

import asyncio
import time

from mpcbandit.config import ServeSection
from mpcbandit.serve.admission import Admission
from mpcbandit.serve.backend import Closed
from mpcbandit.serve.batching import QueueFull
from mpcbandit.serve.metrics import ServeMetrics
from mpcbandit.serve.replies import Reply, bad_request, error
from mpcbandit.serve.requests import BadRequest, parse_reward

__all__ = ["Rewards"]


class Rewards:
    """Reward requests checked against their decision, the waits for a decision not yet
    known, and the closing of decisions whose reward is overdue."""

    def __init__(self, serve: ServeSection, values: tuple[float, ...], admission: Admission,
                 metrics: ServeMetrics, max_abs: float | None = None):
        """values: the only rewards taken (empty: any finite number up to max_abs)."""
        self.serve, self.values, self.admission, self.metrics = serve, values, admission, metrics
        self.max_abs = max_abs
        self.book, self.wal = admission.book, admission.wal
        #: the requests waiting for their id's decision to be known, by id
        self.waiters: dict[str, list[asyncio.Future]] = {}

    async def post(self, raw: bytes) -> Reply:
        """A reward: 202 once it is logged and queued (else the refusal)."""
        refusal = self.admission.refusal("rewards", "rewards (it holds no rewards)")
        if refusal:
            return refusal
        try:
            req = parse_reward(raw, self.values, self.max_abs)
        except BadRequest as e:
            return bad_request(e)
        state = self.book.reward_state(req.id)
        if state == "unknown":
            state = await self._await_decided(req.id)
        if state == "unknown":
            return error(404, f"no decision is known for id {req.id!r} (none within "
                              f"serve.decision_timeout_s = "
                              f"{self.serve.decision_timeout_s:g} s)", id=req.id)
        if state == "closed":
            return error(410, f"the decision for id {req.id!r} waited longer than "
                              f"serve.reward_timeout_s = {self.serve.reward_timeout_s:g} s "
                              "and was closed without an update", id=req.id)
        queue = self.admission.queues["rewards"]
        try:
            queue.reserve()
        except QueueFull as e:
            return self.admission.full(e)
        if not self.book.claim_reward(req.id):
            queue.release()
            return error(409, f"a reward for id {req.id!r} was already received", id=req.id)
        now = time.time()
        fut = self.wal.append({"kind": "reward", "id": req.id, "reward": req.reward,
                               "at": now}, then=lambda _r: queue.put(req))
        failed = await self.admission.durable(fut, lambda: (
            queue.release(), self.book.unclaim_reward(req.id, now)))
        if failed:
            return failed
        self.metrics.rewards.inc()
        self.metrics.reward_sum.inc(req.reward)
        return Reply(202, {"id": req.id})

    def decided(self, ids: list[str], loop: asyncio.AbstractEventLoop | None) -> None:
        """These ids were decided elsewhere (called from the backend's thread): logged, and
        the rewards waiting for them woken on the API's loop."""
        now = time.time()
        for rid in ids:
            self.book.note_decided(rid, now)
            self.wal.append({"kind": "decided", "id": rid, "at": now})
        if loop is not None:
            loop.call_soon_threadsafe(self._wake, list(ids))

    async def _await_decided(self, rid: str) -> str:
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.setdefault(rid, []).append(waiter)
        try:
            if self.book.reward_state(rid) == "unknown":
                await asyncio.wait_for(waiter, self.serve.decision_timeout_s)
        except asyncio.TimeoutError:
            pass
        finally:
            waiters = self.waiters.get(rid, [])
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                self.waiters.pop(rid, None)
        return self.book.reward_state(rid)

    def _wake(self, ids: list[str]) -> None:
        for rid in ids:
            for waiter in self.waiters.pop(rid, []):
                if not waiter.done():
                    waiter.set_result(None)

    async def close_overdue(self) -> None:
        """Close decisions whose reward is overdue: logged, then handed to the backend."""
        period = min(1.0, self.serve.reward_timeout_s / 2)
        queue = self.admission.queues["rewards"]
        while not self.admission.draining:
            await asyncio.sleep(period)
            for rid in self.book.overdue(time.time() - self.serve.reward_timeout_s):
                self.book.close(rid)
                self.metrics.rewards_expired.inc()
                self.wal.append({"kind": "expired", "id": rid, "at": time.time()},
                                then=lambda _r, rid=rid: queue.put(Closed(rid), reserved=False))
