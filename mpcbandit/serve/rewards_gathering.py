"""The rewards a service's leader holds until an update applies them, and the decisions closed
without a reward until a drop does (docs/serve.md): rewards ready gather for serve.update_ms
after the first of them, then one update applies them together (at once when
serve.max_update wait, and at a stop): fewer, larger updates.
"""

from __future__ import annotations

import itertools
import time

from mpcbandit.config import ServeSection
from mpcbandit.serve.loop import POLL_S

__all__ = ["RewardsGathering"]


class RewardsGathering:
    """A leader's rewards ready and decisions closed, and when the next update is due.

    A base of Leader rather than a part of it: the protocols' leaders fill ``ready`` and
    ``closing``, stop the gathering and size an update (``update_size``) as their own."""

    def __init__(self, serve: ServeSection):
        self.serve = serve
        self.ready: dict[str, None] = {}      # rewards to apply, in their order
        self.closing: dict[str, None] = {}    # decisions closed without a reward
        #: rewards gather for serve.update_ms (rewards_wait); not while stopping
        self.gathering = True
        self._ready_since: float | None = None

    def update_size(self, ready: int) -> int:
        """How many of the ready rewards the next update applies."""
        return min(ready, self.serve.max_update)

    def rewards_wait(self) -> float:
        """Seconds until the ready rewards are due for an update: serve.update_ms after the
        first of them was seen ready, none once max_update wait or the leader is stopping."""
        if not self.ready:
            return 0.0
        now = time.monotonic()
        if self._ready_since is None:
            self._ready_since = now
        if not self.gathering or len(self.ready) >= self.serve.max_update:
            return 0.0
        # the elapsed time first: since + window - now rounds past the window at a large clock
        return max(0.0, self.serve.update_ms / 1e3 - (now - self._ready_since))

    def queue_wait(self) -> float:
        """How long the loop may wait on its decision queue: not at all with closings to
        drop, until the rewards gathering are due, else POLL_S."""
        if self.closing:
            return 0.0
        return min(POLL_S, self.rewards_wait()) if self.ready else POLL_S

    def take_closing(self) -> list[str]:
        """The decisions closed so far, in their order, for one drop."""
        ids, self.closing = list(self.closing), {}
        return ids

    def take_due(self) -> list[str]:
        """The rewards the next update applies, in their order, if they are due
        (rewards_wait); none else."""
        if not self.ready or self.rewards_wait():
            return []
        ids = list(itertools.islice(self.ready, self.update_size(len(self.ready))))
        for i in ids:
            del self.ready[i]
        if not self.ready:   # the next reward ready starts the next gathering
            self._ready_since = None
        return ids
