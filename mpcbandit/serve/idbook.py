"""Which request ids a party has seen, by kind: what makes an id a duplicate (409), unknown
(404) or closed (410). Rebuilt from the write-ahead log on restart, so the answers stay the
same across a restart.

A service sees ids for months, so the book does not keep them all in memory: each kind keeps
its last SPILL ids in a set, and moves them in one transaction to an index on disk (sqlite3,
beside the log, private as the log is) when the set is full. The index is only ever read back
by this process: it is made afresh from the log at every start (the log is what is durable),
so it needs no journal on disk and no fsync. An index that cannot be written (a full disk)
leaves the ids in memory, still refused, and is tried again later. Decisions awaiting their
reward stay in memory: they are the ones the party must close after serve.reward_timeout_s.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from pathlib import Path

from mpcbandit.files import OutputError

__all__ = ["IdBook", "SPILL"]

log = logging.getLogger(__name__)

#: ids of one kind kept in memory before they move to the index on disk
SPILL = 4096
#: the index's page cache (KiB): what it costs in memory however many ids it holds
CACHE_KIB = 2048


class _DiskIndex:
    """Ids by kind in a private sqlite3 file, made empty at open (callers hold the book's lock)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.path.unlink(missing_ok=True)   # an index of an earlier start: rebuilt
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            for pragma in ("journal_mode = MEMORY", "synchronous = OFF",
                           f"cache_size = -{CACHE_KIB}"):
                self.db.execute(f"PRAGMA {pragma}")
            self.db.execute("CREATE TABLE ids (kind TEXT, id TEXT, PRIMARY KEY (kind, id)) "
                            "WITHOUT ROWID")
        except (OSError, sqlite3.Error) as e:
            raise OutputError(self.path, e, "make the index of request ids") from None

    def has(self, kind: str, rid: str) -> bool:
        return self.db.execute("SELECT 1 FROM ids WHERE kind = ? AND id = ?",
                               (kind, rid)).fetchone() is not None

    def put(self, kind: str, ids: set[str]) -> None:
        """Add ids in one transaction: all or none."""
        self.db.execute("BEGIN")
        try:
            self.db.executemany("INSERT OR IGNORE INTO ids VALUES (?, ?)",
                                ((kind, i) for i in ids))
            self.db.execute("COMMIT")
        except sqlite3.Error:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def remove(self, kind: str, rid: str) -> None:
        self.db.execute("DELETE FROM ids WHERE kind = ? AND id = ?", (kind, rid))


class _IdSet:
    """The ids of one kind: the last SPILL in memory, the others in the index."""

    def __init__(self, index: _DiskIndex, kind: str, spill: int):
        self.index, self.kind, self.spill = index, kind, spill
        self.recent: set[str] = set()
        self._limit = spill   # more after the index refused them (a full disk)

    def __contains__(self, rid: str) -> bool:
        return rid in self.recent or self.index.has(self.kind, rid)

    def add(self, rid: str) -> None:
        self.recent.add(rid)
        if len(self.recent) >= self._limit:
            try:
                self.index.put(self.kind, self.recent)
            except sqlite3.Error as e:   # a full disk: the ids stay refused, from memory
                log.error("%s: cannot move %d %s id(s) to the index (%s): kept in memory, "
                          "tried again after %d more", self.index.path, len(self.recent),
                          self.kind, e, self.spill)
                self._limit = len(self.recent) + self.spill
                return
            self.recent, self._limit = set(), self.spill

    def discard(self, rid: str) -> None:
        if rid in self.recent:
            self.recent.discard(rid)
        else:
            self.index.remove(self.kind, rid)


class IdBook:
    """Ids of contexts, decision requests, decisions awaiting a reward, rewards, closed ones."""

    def __init__(self, index_path: Path, *, takes_rewards: bool = True, spill: int = SPILL):
        """index_path: the index on disk (made afresh: replay the log into the book)."""
        #: only a party that takes rewards keeps decided ids awaiting theirs
        self.takes_rewards = takes_rewards
        self._lock = threading.Lock()
        self._index = _DiskIndex(index_path)
        self.contexts, self.requested, self.rewarded, self.closed = (
            _IdSet(self._index, kind, spill)
            for kind in ("context", "requested", "rewarded", "closed"))
        #: decided ids awaiting their reward -> wall time of the decision (oldest first)
        self.awaiting: OrderedDict[str, float] = OrderedDict()

    def replay(self, records) -> None:
        """Take in the log's records, oldest first."""
        for r in records:
            kind, rid = r.get("kind"), r.get("id")
            if kind == "context":
                self.claim(self.contexts, rid)
            elif kind == "decision":
                self.claim(self.requested, rid)
                self.note_decided(rid, r.get("at", 0.0))
            elif kind == "decided":
                self.note_decided(rid, r.get("at", 0.0))
            elif kind == "reward":
                self.claim_reward(rid)
            elif kind == "expired":
                self.close(rid)

    def claim(self, ids: _IdSet, rid: str) -> bool:
        """Add rid to ids unless there: True if it was new (the request goes on)."""
        with self._lock:
            if rid in ids:
                return False
            ids.add(rid)
            return True

    def forget(self, ids: _IdSet, rid: str) -> None:
        """Take back a claim whose request was not accepted after all."""
        with self._lock:
            ids.discard(rid)

    def note_decided(self, rid: str, at: float) -> None:
        """rid was decided at wall time at: a reward for it may come."""
        with self._lock:
            if self.takes_rewards and rid not in self.awaiting and rid not in self.rewarded \
                    and rid not in self.closed:
                self.awaiting[rid] = at

    def reward_state(self, rid: str) -> str:
        """'rewarded', 'closed', 'awaiting' or 'unknown'."""
        with self._lock:
            if rid in self.awaiting:   # never rewarded nor closed (those leave awaiting)
                return "awaiting"
            if rid in self.rewarded:
                return "rewarded"
            return "closed" if rid in self.closed else "unknown"

    def claim_reward(self, rid: str) -> bool:
        """Move rid from awaiting to rewarded; False if it was already rewarded or closed."""
        with self._lock:
            if rid not in self.awaiting and (rid in self.rewarded or rid in self.closed):
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
