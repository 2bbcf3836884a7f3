"""p''s op numbers and its op log, in op order (docs/serve.md, "How the parties sequence a
batch"). p' numbers an op as it issues it, with others still under way, but a decision batch's
record names the ids every holder has a slice of, known only once their flags came: a record
waits until it and every op numbered before it are known, and they go to the log in order.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future

from mpcbandit.errors import ProtocolError
from mpcbandit.serve.loop import OpLog

__all__ = ["OpOrder"]


class OpOrder:
    """The op numbers p' gave out and their records not logged yet, logged in op order."""

    def __init__(self, oplog: OpLog, name: str):
        """name: the party, which a stray op's error names."""
        self.oplog, self.name = oplog, name
        self.issued = oplog.n                 # the last op number given out
        self.unlogged: deque[list] = deque()  # [n, kind, ids, extra, ready], in op order

    def number(self, kind: str, ids=None, **extra) -> int:
        """The next op number; its record is logged once it and every op before it are known
        (a decision batch's ids once the holders said which slices they have)."""
        self.issued += 1
        self.unlogged.append([self.issued, kind, ids, extra, ids is not None])
        return self.issued

    def log_ready(self, n: int, ids: list[str]) -> Future | None:
        """Op n's ids are known: log it and the ready ops after it once those before it are
        logged; the future of op n's record (None while an op before it awaits its ids)."""
        # unlogged holds consecutive op numbers from its first: op n is n - first in
        k = n - self.unlogged[0][0] if self.unlogged else -1
        entry = self.unlogged[k] if 0 <= k < len(self.unlogged) else None
        if entry is None or entry[0] != n or entry[4]:
            raise ProtocolError(self.name, "ops.wal", f"op {n}'s ids came, but it is no op "
                                "awaiting them (awaiting: "
                                f"{[e[0] for e in self.unlogged if not e[4]]})")
        entry[2], entry[4] = ids, True
        return self.flush(n)

    def flush(self, want: int | None = None) -> Future | None:
        """Log the records known at the head, in op order; the future of op want's record."""
        fut = None
        while self.unlogged and self.unlogged[0][4]:
            n, kind, ids, extra, _ = self.unlogged.popleft()
            got = self.oplog.append(kind, ids, **extra)
            if self.oplog.n != n:
                raise ProtocolError(self.name, "ops.wal", f"logged op {self.oplog.n}, "
                                    f"expected {n}")
            if n == want:
                fut = got
        return fut
