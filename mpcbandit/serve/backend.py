"""Where the shell meets the secure part: what a backend is asked, and what it may call.

The shell (HTTP, validation, the log, the batching window) knows no shares; the backend knows
no HTTP. A backend is started with a ``ServicePort`` and from its own thread(s):

- pulls batches, in arrival order: ``port.next_batch("decisions")`` (items are ``Ticket``s),
  ``port.next_batch("contexts")`` (``ContextRequest``s), ``port.next_batch("rewards")``
  (``RewardRequest``s, and ``Closed`` for a decision whose reward never came);
- answers each decision: ``ticket.decide(arm, step)`` (the shell logs it, then answers 200),
  or ``ticket.refuse(reason, missing)`` (503 naming the reason: a peer gone, the holders whose
  slice is missing); a decision replayed at a resume, whose request is gone, is logged with
  ``port.record_decision(id, arm, step)``;
- tells a party that takes rewards which ids were decided: ``port.decided(ids)`` (a reward for
  an id not decided within ``serve.decision_timeout_s`` is 404);
- reports its state whenever it changes: ``port.report(ready=..., step=..., peers=...)``
  (``/v1/health``; a peer reported ``"gone"`` makes decisions fail fast with 503 naming it),
  each op's cost: ``port.report_op(op, rounds, bytes_sent)``, and how long its decisions
  spent in its stages: ``port.report_stage(stage, seconds, count)`` (``/metrics``);
- ends its loop once ``port.drained(kind)`` holds for every kind it pulls (SIGTERM closed the
  queues and every open batch was handed out).

The shell calls ``backend.start(port)`` once, ``backend.missing(id)`` when a decision times
out (which holders' slices for that id never arrived) and ``backend.stop(deadline_s)`` at the
end of a drain (return once every batch taken is finished).
"""

from __future__ import annotations

import operator
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Protocol

from mpcbandit.serve.batching import Batch

__all__ = ["Backend", "ServicePort", "BackendState", "Ticket", "Decided", "Refused", "Closed",
           "KINDS"]

#: what a backend may say of a peer
#: the kinds of request, each with its queue: a party has those its role takes
KINDS = ("contexts", "decisions", "rewards")


@dataclass(frozen=True)
class BackendState:
    """What the backend last reported: ready once its peers said hello; peers by name."""

    ready: bool = False
    step: int = 0
    peers: dict[str, str] = field(default_factory=dict)
    #: why it is not ready or what failed, in words (empty when all is well)
    reason: str = ""

    @property
    def gone(self) -> list[str]:
        """The peers the backend reported gone (sorted)."""
        return sorted(p for p, s in self.peers.items() if s == "gone")


@dataclass(frozen=True)
class Decided:
    """A ticket's outcome: the arm, the model step that chose it."""

    arm: int
    step: int


@dataclass(frozen=True)
class Refused:
    """A ticket's outcome: no arm, and why (answered 503 with the reason and, if the backend
    named them, the holders whose slice is missing)."""

    reason: str
    missing: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Closed:
    """A rewards-queue item: the decision for id got no reward within serve.reward_timeout_s."""

    id: str


class Ticket:
    """A decision a waiting request is owed; the backend settles it exactly once."""

    def __init__(self, request_id: str, record: Callable[["Ticket", Decided], None]):
        self.id = request_id
        self._record = record
        self._lock = threading.Lock()
        self._settled = False
        #: set by the shell when the request timed out (a later decision is counted late)
        self.abandoned = False
        #: when the request was accepted, and when the backend decided it (monotonic): the
        #: shell's stages of a decision (queued, log) in /metrics
        self.accepted = time.monotonic()
        self.decided_at: float | None = None
        #: resolves with Decided once the decision is in the log, or with Refused
        self.outcome: Future = Future()

    def _settle_once(self) -> bool:
        with self._lock:
            if self._settled:
                return False
            self._settled = True
            return True

    def decide(self, arm: int, step: int) -> None:
        """The backend chose arm at step: logged, then answered. A second settle is ignored."""
        if isinstance(arm, bool):
            raise TypeError(f"ticket {self.id!r}: an arm is an integer, got a bool")
        arm = operator.index(arm)  # a numpy integer is welcome; a float is a TypeError
        if self._settle_once():
            self.decided_at = time.monotonic()
            self._record(self, Decided(arm, operator.index(step)))

    def refuse(self, reason: str, missing: list[str] | None = None) -> None:
        """The backend cannot decide (a peer gone, a holder's slice missing, ...): the request
        is answered 503 with the reason (and the missing holders)."""
        if self._settle_once():
            self.outcome.set_result(Refused(reason, list(missing or [])))


class ServicePort(Protocol):
    """The shell as a backend sees it."""

    #: the log's records at start (contexts, decisions, rewards...), to replay
    records: list[dict]

    def next_batch(self, kind: str, max_items: int | None = None,
                   window_s: float | None = None, wait_s: float = 1.0, *,
                   patient: bool = True) -> Batch | None:
        """The next batch of kind (serve.max_batch and serve.batch_ms unless given; not
        patient: None while its window is open, batching.py)."""

    def drained(self, kind: str) -> bool:
        """The queue of kind is closed and empty: no more batches will come."""

    def report(self, *, ready: bool | None = None, step: int | None = None,
               peers: dict[str, str] | None = None, reason: str | None = None) -> None:
        """The backend's state changed (only the given fields)."""

    def report_op(self, op: str, rounds: int, bytes_sent: int) -> None:
        """One op ran: its rounds and bytes sent (counted in /metrics by op)."""

    def report_stage(self, stage: str, seconds: float, count: int = 1) -> None:
        """count decisions spent seconds in one of the backend's stages (metrics.py,
        BACKEND_STAGES)."""

    def decided(self, ids: list[str]) -> None:
        """These ids were decided (a party that takes rewards accepts rewards for them)."""

    def record_decision(self, request_id: str, arm: int, step: int) -> None:
        """A decision made with no request waiting for it (replayed when the service resumed):
        logged like an answered one; asking for its id again is a 409."""


class Backend(Protocol):
    """The secure part, as the shell sees it."""

    def start(self, port: ServicePort) -> None:
        """Start pulling batches (in threads of its own) and return."""

    def missing(self, request_id: str) -> list[str]:
        """The holders whose slice for request_id has not arrived (names, for a 503)."""

    def stop(self, deadline_s: float) -> None:
        """The queues are closed: finish the batches taken, return within deadline_s."""
