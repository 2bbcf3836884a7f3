"""What every request to a party's API passes before its kind's own work (service.py says the
order for each kind): the party is not stopping and takes that kind, the body is well formed,
the id is new and the kind's queue has room; and, once logged, the record is on disk before
the answer."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future

from mpcbandit.config import ServeSection
from mpcbandit.files import OutputError
from mpcbandit.serve.batching import BatchQueue, QueueFull
from mpcbandit.serve.idbook import IdBook
from mpcbandit.serve.replies import Reply, bad_request, error
from mpcbandit.serve.requests import BadRequest
from mpcbandit.serve.wal import WriteAheadLog

__all__ = ["Admission", "DURABLE_DEADLINE_S"]

#: an answer waits at most this long for its record's fsync (a stuck disk is a 503, not a hang)
DURABLE_DEADLINE_S = 10.0

#: which application sends each kind (for a 404 that says where to send it)
_SENDS = {"contexts": "holds features", "decisions": "pulls arms", "rewards": "holds rewards"}


class Admission:
    """A party's checks on each request (503, 404, 400, 409, 429) and the wait for its
    record's fsync; it holds the ids taken, the queues and the log they go to."""

    def __init__(self, serve: ServeSection, party: str, book: IdBook,
                 queues: dict[str, BatchQueue], wal: WriteAheadLog):
        self.serve, self.party = serve, party
        self.book, self.queues, self.wal = book, queues, wal
        #: set by SIGTERM: every new request is refused
        self.draining = False

    def refusal(self, kind: str, what: str) -> Reply | None:
        """503 while stopping, 404 if this party takes no requests of kind (what: the kind in
        words, and why not); None if it takes them."""
        if self.draining:
            return error(503, f"party {self.party} is stopping (SIGTERM): it takes no "
                              "new requests")
        if kind not in self.queues:
            return error(404, f"party {self.party} takes no {what}: send them to the "
                              f"party whose application {_SENDS[kind]}")
        return None

    def admit(self, kind: str, what: str, raw: bytes, parse, ids: set[str], noun: str,
              check=None):
        """Refusals, the body's check, the id's claim (409) and a queue place (429): the
        request, or the Reply that refuses it."""
        refusal = self.refusal(kind, what)
        if refusal:
            return refusal
        try:
            req = parse(raw)
        except BadRequest as e:
            return bad_request(e)
        unfit = check() if check else None
        if unfit:
            return unfit
        if not self.book.claim(ids, req.id):
            return error(409, f"{noun} for id {req.id!r} was already received", id=req.id)
        try:
            self.queues[kind].reserve()
        except QueueFull as e:
            self.book.forget(ids, req.id)
            return self.full(e)
        return req

    def full(self, e: QueueFull) -> Reply:
        """A 429 for a full queue, with when to try again (a few batching windows)."""
        retry = max(1, round(self.serve.batch_ms / 1e3 * 4))
        return Reply(429, {"error": str(e)}, {"Retry-After": str(retry)})

    async def durable(self, fut: Future, undo) -> Reply | None:
        """Wait for a record's fsync; a Reply (503) if the log failed (then undo()) or is
        stuck."""
        try:
            # no shield: a timeout cancels only the waiter's future (the log ignores it and
            # still writes the record), and a shield and wait_for cost a request twice that
            async with asyncio.timeout(DURABLE_DEADLINE_S):
                await asyncio.wrap_future(fut)
        except asyncio.TimeoutError:
            return error(503, f"the write-ahead log {self.wal.path} did not reach the disk "
                              f"within {DURABLE_DEADLINE_S:g} s")
        except OutputError as e:
            undo()
            return error(503, str(e))
        return None
