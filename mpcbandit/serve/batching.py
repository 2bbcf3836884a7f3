"""The batching window: requests of one kind wait here, in arrival order, until the backend
takes them as one batch.

The backend pulls (``next_batch(max_items, window_s, wait_s)``): once a first request is
waiting, it gets every request that arrived within ``window_s`` of that first one, at most
``max_items`` of them, in arrival order. A backend still busy with the previous batch when
the window has passed gets what waits at once (up to ``max_items``), so a batch never waits
longer than its window for a backend that is free. The queue holds at most ``limit`` requests
(counting those accepted but not yet queued); beyond that ``reserve`` raises QueueFull (429).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

__all__ = ["Batch", "BatchQueue", "QueueFull"]


class QueueFull(Exception):
    """The queue holds its limit of requests; the caller answers 429."""

    def __init__(self, kind: str, limit: int):
        self.kind = kind
        self.limit = limit
        super().__init__(f"the {kind} queue is full ({limit} waiting, serve.queue_limit)")


@dataclass(frozen=True)
class Batch:
    """Requests handed to the backend together: the queue's batch number, in arrival order."""

    kind: str
    number: int
    items: list[Any]
    #: how long the first request of the batch waited in the queue
    waited_s: float = 0.0


class BatchQueue:
    """A bounded FIFO of one kind of request that hands them out in batches."""

    def __init__(self, kind: str, limit: int):
        self.kind = kind
        self.limit = limit
        self._items: deque[tuple[float, Any]] = deque()
        self._reserved = 0
        self._cond = threading.Condition()
        self._closed = False
        self.batches = 0
        #: the batch size a waiting backend fills up to (put wakes it only when it is reached)
        self._filling_to: int | None = None

    @property
    def depth(self) -> int:
        """Requests accepted and not yet handed to the backend."""
        with self._cond:
            return len(self._items) + self._reserved

    def reserve(self) -> None:
        """Hold a place for a request being accepted, or raise QueueFull."""
        with self._cond:
            if len(self._items) + self._reserved >= self.limit:
                raise QueueFull(self.kind, self.limit)
            self._reserved += 1

    def release(self) -> None:
        """Give back a place reserved for a request that was not accepted after all."""
        with self._cond:
            self._reserved -= 1

    def put(self, item: Any, *, reserved: bool = True) -> None:
        """Queue a request (whose place was reserved, unless told); it joins the next batch."""
        with self._cond:
            if reserved:
                self._reserved -= 1
            self._items.append((time.monotonic(), item))
            # wake the backend only when it has something new to do: its first request came,
            # or its batch is full. A wake-up per request costs the service a thread switch
            # (and the GIL) for every request; a waiting backend wakes at its window's end anyway.
            if len(self._items) == 1 or (self._filling_to is not None
                                         and len(self._items) >= self._filling_to):
                self._cond.notify_all()

    def close(self) -> None:
        """No more requests come: batches are handed out without waiting for a window."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def drained(self) -> bool:
        """Closed, and every request handed out: the backend's loop may end."""
        with self._cond:
            return self._closed and not self._items and not self._reserved

    def next_batch(self, max_items: int, window_s: float, wait_s: float, *,
                   patient: bool = True) -> Batch | None:
        """The next batch, or None if no request arrived within wait_s (or drained). Not
        patient (a backend with other work under way): None while the first request's window
        is open and the batch is not full, without waiting; it stays queued."""
        end = time.monotonic() + wait_s
        with self._cond:
            while not self._items:
                left = end - time.monotonic()
                if left <= 0 or (self._closed and not self._reserved):
                    return None
                self._cond.wait(left)
            first = self._items[0][0]
            if (not patient and not self._closed and len(self._items) < max_items
                    and time.monotonic() < first + window_s):
                return None
            self._filling_to = max_items
            try:
                while len(self._items) < max_items and not self._closed:
                    left = first + window_s - time.monotonic()
                    if left <= 0:
                        break
                    self._cond.wait(left)
            finally:
                self._filling_to = None
            count = min(max_items, len(self._items))
            items = [self._items.popleft()[1] for _ in range(count)]
            self.batches += 1
            return Batch(self.kind, self.batches, items, time.monotonic() - first)
