"""The dealer's serve loop: answers the computing parties' material requests, batch by batch.

Every computing party asks for the same batches in the same order (they run the same ops);
the dealer makes batch k on the first request for it, hands each party its seed (and the
corrections to the party that has received the fewest correction bytes so far) and checks that
every party's k-th request names the same kind, params and size. Each batch uses fresh seeds
from the dealer's PRG, so no material is ever handed out twice. Errors (material exhausted,
mismatching requests) go back to the asking party as ``{"error": ...}`` and that party raises.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from dealer.material import layout, make_batch
from mpcbandit.errors import PeerTimeout
from mpcbandit.mpc.prg import Prg

__all__ = ["serve", "MaterialServer", "LABEL", "DEFAULT_MAX_ELEMENTS"]

LABEL = "dealer"
#: default budget of material elements one dealer run hands out (all kinds together)
DEFAULT_MAX_ELEMENTS = 2 ** 34


def _canon(x):
    """msgpack turns tuples into lists; compare keys as nested tuples."""
    return tuple(_canon(v) for v in x) if isinstance(x, (list, tuple)) else x


@dataclass
class _Batch:
    key: tuple
    units: int
    seeds: list[bytes]
    corrections: list
    corrected: int
    waiting: set = field(default_factory=set)


class MaterialServer:
    """The dealer's answers to its computing parties' material requests, one message at a time
    (``handle``): what ``serve`` runs until every party said bye, and what a dealer that also
    does other work (``mpcbandit serve``'s, which pushes exploration blocks on demand) calls
    for each request it reads."""

    def __init__(self, chan, parties: list[str], *, max_elements: int | None = None):
        """max_elements: the most elements it hands out (DEFAULT_MAX_ELEMENTS if None)."""
        self.chan, self.parties = chan, list(parties)
        self.max_elements = DEFAULT_MAX_ELEMENTS if max_elements is None else max_elements
        self.n = len(parties)
        self.prg = Prg()
        self.batches: dict[int, _Batch] = {}
        self.made = 0
        self.next_seq = dict.fromkeys(parties, 0)
        self.done: set[str] = set()
        self.elements = 0
        self.corrected_bytes = [0] * self.n  # per party: the next corrections go to the fewest

    @property
    def waiting(self) -> list[str]:
        """The parties that have not said bye."""
        return [p for p in self.parties if p not in self.done]

    def counts(self) -> dict:
        """What was served: batches and elements."""
        return {"batches": self.made, "elements": self.elements}

    def handle(self, peer: str, msg: dict) -> None:
        """Answer one message of peer's: a material request, or its bye."""
        chan, n = self.chan, self.n
        if msg.get("bye"):
            self.done.add(peer)
            return
        seq, key, units = msg["seq"], _canon(msg["key"]), int(msg["units"])
        if seq != self.next_seq[peer]:
            chan.send(LABEL, peer, {"error": f"request #{seq} out of order, dealer expected "
                                             f"#{self.next_seq[peer]} from {peer}"})
            return
        self.next_seq[peer] += 1
        if seq == self.made:
            kind, params = key[0], key[1:]
            try:
                size = units * sum(int(np.prod(c.unit_shape, dtype=np.int64))
                                   for c in layout(kind, params))
            except (KeyError, TypeError) as e:
                chan.send(LABEL, peer, {"error": f"bad material request {key!r}: {e}"})
                return
            if self.elements + size > self.max_elements:
                chan.send(LABEL, peer, {"error": f"dealer material exhausted: {peer} asked for "
                                                 f"{size} more elements of {kind!r}, "
                                                 f"{self.elements} of {self.max_elements} "
                                                 "already served"})
                return
            self.elements += size
            fix = min(reversed(range(n)), key=self.corrected_bytes.__getitem__)
            seeds, corr = make_batch(kind, params, units, n, self.prg, fix)
            self.corrected_bytes[fix] += sum(c.nbytes for c in corr)
            self.batches[seq] = _Batch(key, units, seeds, corr, fix, set(self.parties))
            self.made += 1
        b = self.batches.get(seq)
        if b is None or (b.key, b.units) != (key, units):
            want = "an expired batch" if b is None else f"{b.key} x {b.units}"
            chan.send(LABEL, peer, {"error": f"material mismatch: {peer}'s request #{seq} is "
                                             f"{key} x {units}, another party asked for {want}"})
            return
        i = self.parties.index(peer)
        reply = {"seq": seq, "key": list(key), "units": units, "seed": b.seeds[i],
                 "corrected": b.corrected}
        if i == b.corrected:
            reply["corr"] = b.corrections
        chan.send(LABEL, peer, reply)
        b.waiting.discard(peer)
        if not b.waiting:
            del self.batches[seq]


def serve(chan, parties: list[str], *, max_elements: int | None = None,
          idle_s: float = 600.0) -> dict:
    """Serve material to parties until each has said bye; return counts of what was served.

    Gives up (PeerTimeout naming the silent parties) after idle_s without any request."""
    server = MaterialServer(chan, parties, max_elements=max_elements)
    idle_since = time.monotonic()
    while server.waiting:
        try:
            peer, msg = chan.receive_any(LABEL, server.waiting)
        except PeerTimeout:
            if time.monotonic() - idle_since > idle_s:
                raise
            continue
        idle_since = time.monotonic()
        server.handle(peer, msg)
    return server.counts()
