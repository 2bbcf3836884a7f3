"""The open-loop load of `mpcbandit bench serve`: N decision requests at a fixed rate, each
started on its schedule whether or not the earlier ones were answered, each posting the
holders' slices, then asking for the decision, then (after a delay) posting the reward of
the arm served. Latency counts from the scheduled start, so a service (or a client) that
falls behind is not flattered (no coordinated omission).

asyncio and aiohttp's client (a dependency of `mpcbandit serve`), keep-alive connections, one
session per party, every body encoded before the clock starts: the client shares the cores
with the parties, so it is kept cheap, and its own CPU time is measured and reported.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import aiohttp

__all__ = ["Request", "Load", "LoadOutcome", "run_load"]

JSON = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class Request:
    """One decision request: its id, each holder's slice (JSON bodies, in holder order; none
    when the holders look the id up themselves), and every arm's reward (the one of the arm
    served is posted)."""

    id: str
    contexts: tuple[bytes, ...]
    rewards: Sequence[float]

    @classmethod
    def of(cls, rid: str, slices: Sequence[Sequence[float]], rewards: Sequence[float]):
        """A request whose bodies are encoded now, before any clock runs."""
        return cls(rid, tuple(json.dumps({"id": rid, "features": list(map(float, s))}).encode()
                              for s in slices), tuple(map(float, rewards)))


@dataclass(frozen=True)
class Load:
    """Where and how to send: the holders' URLs (in slice order), p′'s, p″'s; the rate in
    requests per second; the reward's delay after its decision; a bound on each request."""

    holders: tuple[str, ...]
    puller: str
    rewarder: str
    rate: float
    reward_delay_s: float
    timeout_s: float


@dataclass
class LoadOutcome:
    """What the client saw: per answered decision its latency (s, from its scheduled start),
    of which the part before the decision was asked (its slices posted), and its answer's
    time (monotonic); every other outcome counted by what and status."""

    started: float
    scheduled_s: float
    latencies: list[float] = field(default_factory=list)
    before_asking: list[float] = field(default_factory=list)
    answered_at: list[float] = field(default_factory=list)
    failures: Counter = field(default_factory=Counter)
    rewards: int = 0
    cpu_s: float = 0.0
    wall_s: float = 0.0

    def sustained_per_s(self) -> float:
        """Decisions answered per second over the middle 80 % of the schedule: the rate
        offered if the service keeps up, its capacity if it falls behind."""
        lo, hi = self.started + 0.1 * self.scheduled_s, self.started + 0.9 * self.scheduled_s
        inside = sum(lo <= t < hi for t in self.answered_at)
        return inside / (hi - lo) if hi > lo else float("nan")


async def _post(session: aiohttp.ClientSession, url: str, body: bytes) -> tuple[int, bytes]:
    async with session.post(url, data=body, headers=JSON) as answer:
        return answer.status, await answer.read()


async def _one(req: Request, at: float, load: Load, sessions, out: LoadOutcome,
               on_answered: Callable[[int], None] | None) -> None:
    holders, puller, rewarder = sessions
    try:
        if req.contexts:   # else the holders look the id up in their own data
            posted = await asyncio.gather(*(_post(s, u + "/v1/contexts", b) for s, u, b in
                                            zip(holders, load.holders, req.contexts)))
            bad = [status for status, _ in posted if status != 202]
            if bad:
                out.failures[f"context {bad[0]}"] += 1
                return
        asked = time.monotonic()
        status, body = await _post(puller, load.puller + "/v1/decisions",
                                   b'{"id": %s}' % json.dumps(req.id).encode())
        now = time.monotonic()
        if status != 200:
            out.failures[f"decision {status}"] += 1
            return
        out.latencies.append(now - at)
        out.before_asking.append(asked - at)
        out.answered_at.append(now)
        if on_answered is not None:
            on_answered(len(out.latencies))
        arm = json.loads(body)["arm"]
        await asyncio.sleep(max(0.0, now + load.reward_delay_s - time.monotonic()))
        reward = json.dumps({"id": req.id, "reward": req.rewards[arm]}).encode()
        status, _ = await _post(rewarder, load.rewarder + "/v1/rewards", reward)
        if status == 202:
            out.rewards += 1
        else:
            out.failures[f"reward {status}"] += 1
    except (aiohttp.ClientError, asyncio.TimeoutError) as e:
        out.failures[type(e).__name__] += 1


async def _run(requests: Sequence[Request], load: Load,
               on_answered: Callable[[int], None] | None) -> LoadOutcome:
    timeout = aiohttp.ClientTimeout(total=load.timeout_s)

    def session() -> aiohttp.ClientSession:  # unlimited keep-alive connections to one party
        return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), timeout=timeout)

    holders = [session() for _ in load.holders]
    puller, rewarder = session(), session()
    try:
        start = time.monotonic() + 0.05
        out = LoadOutcome(start, len(requests) / load.rate)
        cpu0 = time.process_time()
        tasks: set[asyncio.Task] = set()   # the open ones only: 10^5 requests in a long run
        for k, req in enumerate(requests):
            at = start + k / load.rate
            ahead = at - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)
            task = asyncio.create_task(_one(req, at, load, (holders, puller, rewarder), out,
                                            on_answered))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        # each request is bounded by its session's timeout, twice (decision, then reward)
        late: set[asyncio.Task] = set()
        if tasks:
            _, late = await asyncio.wait(set(tasks), timeout=2 * load.timeout_s
                                         + load.reward_delay_s + 5.0)
        for task in late:
            task.cancel()
        if late:
            out.failures["unfinished"] += len(late)
        out.cpu_s = time.process_time() - cpu0
        out.wall_s = time.monotonic() - start
        return out
    finally:
        for s in (*holders, puller, rewarder):
            await s.close()


def run_load(requests: Sequence[Request], load: Load,
             on_answered: Callable[[int], None] | None = None) -> LoadOutcome:
    """Send the requests open-loop at load.rate and return what the client saw; its own CPU
    time (this process, while the load ran) in `cpu_s`. on_answered(count) is called as each
    decision is answered (e.g. to sample the parties' memory at given counts)."""
    return asyncio.run(_run(requests, load, on_answered))
