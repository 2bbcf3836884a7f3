"""A party's decision requests (service.py says the order of work): refused at once while a
peer is gone or the backend is not ready; else queued as a ticket the backend settles, logged
before the 200, or answered 503 after serve.decision_timeout_s naming the missing holders."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from typing import Callable

from mpcbandit.config import ServeSection
from mpcbandit.errors import printable
from mpcbandit.files import OutputError
from mpcbandit.serve.admission import Admission
from mpcbandit.serve.backend import Backend, BackendState, Decided, Refused, Ticket
from mpcbandit.serve.metrics import ServeMetrics
from mpcbandit.serve.replies import Reply, error
from mpcbandit.serve.requests import parse_decision

__all__ = ["Decisions", "REFUSAL_GRACE_S"]

# How long past serve.decision_timeout_s a decision waits for the backend's own answer (its
# refusal naming the missing holders is due at the timeout; on a loaded machine it lands after).
REFUSAL_GRACE_S = 1.0
#: the most of the backend's reason a 503 carries (/v1/health and the log have all of it)
REASON_CHARS = 300


class Decisions:
    """The decision requests a party holds open until the backend settles their tickets, and
    each decision's log record."""

    def __init__(self, serve: ServeSection, admission: Admission, backend: Backend,
                 metrics: ServeMetrics, state: Callable[[], BackendState]):
        """state: the backend's state as it last reported it."""
        self.serve, self.admission, self.backend = serve, admission, backend
        self.book, self.wal = admission.book, admission.wal
        self.metrics, self.state = metrics, state
        #: decisions whose request still waits (refused at once when a peer is reported gone)
        self.open_tickets: set[Ticket] = set()

    async def post(self, raw: bytes) -> Reply:
        """A decision request: 200 with the arm once decided and logged, else 503 (or the
        admission's refusal)."""
        req = self.admission.admit("decisions", "decision requests (it pulls no arms)", raw,
                                   parse_decision, self.book.requested, "a decision request",
                                   check=self._unfit_to_decide)
        if isinstance(req, Reply):
            return req
        queue = self.admission.queues["decisions"]
        ticket = Ticket(req.id, self.record)
        self.open_tickets.add(ticket)
        try:
            queue.put(ticket)
            return await self._await_decision(ticket)
        finally:
            self.open_tickets.discard(ticket)

    def refuse_open(self, reason: str) -> None:
        """Refuse every decision whose request still waits (a peer reported gone)."""
        # a copy: the backend's thread calls this while the API's loop adds and removes
        for ticket in list(self.open_tickets):
            ticket.refuse(reason)

    def record_replayed(self, rid: str, arm: int, step: int) -> None:
        """A decision made with no request waiting (replayed at a resume): logged, id taken."""
        self.book.claim(self.book.requested, rid)
        Ticket(rid, self.record).decide(arm, step)

    def _unfit_to_decide(self) -> Reply | None:
        state = self.state()
        if state.gone:
            # the backend's reason (an error's whole chain, often) stays apart from the error,
            # which `gone` already says
            return error(503, f"peer(s) {', '.join(state.gone)} gone: no decision can be made",
                         gone=state.gone, **({"reason": printable(state.reason, REASON_CHARS)}
                                             if state.reason else {}))
        if not state.ready:
            return error(503, "not ready: " + (state.reason or "the backend has not said "
                                               "it is ready (peers' hello)"))
        return None

    async def _await_decision(self, ticket: Ticket) -> Reply:
        timeout = self.serve.decision_timeout_s
        outcome_ = asyncio.wrap_future(ticket.outcome)
        try:
            # the backend refuses a request whose slices did not come by the timeout (naming
            # the holders): its answer is awaited a little past it. asyncio.wait cancels
            # nothing, so the outcome stays readable.
            await asyncio.wait((outcome_,), timeout=timeout + min(REFUSAL_GRACE_S, timeout))
            if not outcome_.done():
                ticket.abandoned = True
                missing = self.backend.missing(ticket.id)
                self.metrics.decision_timeouts.inc()
                waits = (f"waiting for the slice of {', '.join(missing)}" if missing
                         else "every holder's slice arrived; the backend did not finish")
                return error(503, f"no decision for id {ticket.id!r} within "
                                  f"serve.decision_timeout_s = {timeout:g} s: {waits}",
                             id=ticket.id, missing=missing)
            outcome = outcome_.result()
        except OutputError as e:
            return error(503, str(e), id=ticket.id)
        if isinstance(outcome, Refused):
            return error(503, f"no decision for id {ticket.id!r}: {outcome.reason}",
                         id=ticket.id, **({"missing": outcome.missing} if outcome.missing
                                          else {}))
        self.metrics.answered(ticket, outcome.arm)
        return Reply(200, {"id": ticket.id, "arm": outcome.arm})

    def record(self, ticket: Ticket, decided: Decided) -> None:
        """Log the backend's decision; the ticket's outcome resolves once it is durable."""
        now = time.time()
        if ticket.abandoned:
            self.metrics.decisions_late.inc()
        self.book.note_decided(ticket.id, now)
        fut = self.wal.append({"kind": "decision", "id": ticket.id, "arm": decided.arm,
                               "step": decided.step, "at": now})

        def settle(done: Future) -> None:
            failed = done.exception()
            if failed is not None:
                ticket.outcome.set_exception(failed)
            else:
                ticket.outcome.set_result(decided)
        fut.add_done_callback(settle)
