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

__all__ = ["serve", "LABEL", "DEFAULT_MAX_ELEMENTS"]

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


def serve(chan, parties: list[str], *, max_elements: int = DEFAULT_MAX_ELEMENTS,
          idle_s: float = 600.0) -> dict:
    """Serve material to parties until each has said bye; return counts of what was served.

    Gives up (PeerTimeout naming the silent parties) after idle_s without any request."""
    n = len(parties)
    prg = Prg()
    batches: dict[int, _Batch] = {}
    made = 0
    next_seq = dict.fromkeys(parties, 0)
    done: set[str] = set()
    elements = 0
    corrected_bytes = [0] * n  # per party: the next batch's corrections go to the fewest
    idle_since = time.monotonic()
    while len(done) < n:
        waiting = [p for p in parties if p not in done]
        try:
            peer, msg = chan.receive_any(LABEL, waiting)
        except PeerTimeout:
            if time.monotonic() - idle_since > idle_s:
                raise
            continue
        idle_since = time.monotonic()
        if msg.get("bye"):
            done.add(peer)
            continue
        seq, key, units = msg["seq"], _canon(msg["key"]), int(msg["units"])
        if seq != next_seq[peer]:
            chan.send(LABEL, peer, {"error": f"request #{seq} out of order, dealer expected "
                                             f"#{next_seq[peer]} from {peer}"})
            continue
        next_seq[peer] += 1
        if seq == made:
            kind, params = key[0], key[1:]
            try:
                size = units * sum(int(np.prod(c.unit_shape, dtype=np.int64))
                                   for c in layout(kind, params))
            except (KeyError, TypeError) as e:
                chan.send(LABEL, peer, {"error": f"bad material request {key!r}: {e}"})
                continue
            if elements + size > max_elements:
                chan.send(LABEL, peer, {"error": f"dealer material exhausted: {peer} asked for "
                                                 f"{size} more elements of {kind!r}, "
                                                 f"{elements} of {max_elements} already served"})
                continue
            elements += size
            fix = min(reversed(range(n)), key=corrected_bytes.__getitem__)
            seeds, corr = make_batch(kind, params, units, n, prg, fix)
            corrected_bytes[fix] += sum(c.nbytes for c in corr)
            batches[seq] = _Batch(key, units, seeds, corr, fix, set(parties))
            made += 1
        b = batches.get(seq)
        if b is None or (b.key, b.units) != (key, units):
            want = "an expired batch" if b is None else f"{b.key} x {b.units}"
            chan.send(LABEL, peer, {"error": f"material mismatch: {peer}'s request #{seq} is "
                                             f"{key} x {units}, another party asked for {want}"})
            continue
        i = parties.index(peer)
        reply = {"seq": seq, "key": list(key), "units": units, "seed": b.seeds[i],
                 "corrected": b.corrected}
        if i == b.corrected:
            reply["corr"] = b.corrections
        chan.send(LABEL, peer, reply)
        b.waiting.discard(peer)
        if not b.waiting:
            del batches[seq]
    return {"batches": made, "elements": elements}
