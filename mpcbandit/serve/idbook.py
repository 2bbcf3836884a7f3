"""Which request ids a party has seen, by kind: what makes an id a duplicate (409), unknown
(404) or closed (410). Rebuilt from the write-ahead log on restart, so the answers stay the
same across a restart."""

from __future__ import annotations

import threading
from collections import OrderedDict

__all__ = ["IdBook"]


class IdBook:
    """Ids of contexts, decision requests, decisions awaiting a reward, rewards, closed ones."""

    def __init__(self, *, takes_rewards: bool = True) -> None:
        #: only a party that takes rewards keeps decided ids awaiting theirs
        self.takes_rewards = takes_rewards
        self._lock = threading.Lock()
        self.contexts: set[str] = set()
        self.requested: set[str] = set()
        #: decided ids awaiting their reward -> wall time of the decision (oldest first)
        self.awaiting: OrderedDict[str, float] = OrderedDict()
        self.rewarded: set[str] = set()
        self.closed: set[str] = set()

    def replay(self, records: list[dict]) -> None:
        """Take in the log's records, oldest first."""
        for r in records:
            kind, rid = r.get("kind"), r.get("id")
            if kind == "context":
                self.contexts.add(rid)
            elif kind == "decision":
                self.requested.add(rid)
                self.note_decided(rid, r.get("at", 0.0))
            elif kind == "decided":
                self.note_decided(rid, r.get("at", 0.0))
            elif kind == "reward":
                self.claim_reward(rid)
            elif kind == "expired":
                self.close(rid)

    def claim(self, ids: set[str], rid: str) -> bool:
        """Add rid to ids unless there: True if it was new (the request goes on)."""
        with self._lock:
            if rid in ids:
                return False
            ids.add(rid)
            return True

    def forget(self, ids: set[str], rid: str) -> None:
        """Take back a claim whose request was not accepted after all."""
        with self._lock:
            ids.discard(rid)

    def note_decided(self, rid: str, at: float) -> None:
        """rid was decided at wall time at: a reward for it may come."""
        with self._lock:
            if self.takes_rewards and rid not in self.rewarded and rid not in self.closed:
                self.awaiting.setdefault(rid, at)

    def reward_state(self, rid: str) -> str:
        """'rewarded', 'closed', 'awaiting' or 'unknown'."""
        with self._lock:
            if rid in self.rewarded:
                return "rewarded"
            if rid in self.closed:
                return "closed"
            return "awaiting" if rid in self.awaiting else "unknown"

    def claim_reward(self, rid: str) -> bool:
        """Move rid from awaiting to rewarded; False if it was already rewarded or closed."""
        with self._lock:
            if rid in self.rewarded or rid in self.closed:
                return False
            self.awaiting.pop(rid, None)
            self.rewarded.add(rid)
            return True

    def unclaim_reward(self, rid: str, at: float) -> None:
        """Undo claim_reward for a reward that was not accepted after all."""
        with self._lock:
            self.rewarded.discard(rid)
            self.awaiting[rid] = at
            self.awaiting.move_to_end(rid, last=False)

    def close(self, rid: str) -> None:
        """rid's reward will never be applied (it came too late or never)."""
        with self._lock:
            self.awaiting.pop(rid, None)
            self.closed.add(rid)

    def overdue(self, before: float) -> list[str]:
        """Ids awaiting a reward since before a wall time (oldest first)."""
        with self._lock:
            out = []
            for rid, at in self.awaiting.items():
                if at >= before:
                    break
                out.append(rid)
            return out

    @property
    def rewards_pending(self) -> int:
        """Decisions awaiting their reward."""
        with self._lock:
            return len(self.awaiting)
