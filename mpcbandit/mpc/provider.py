"""A computing party's supply of dealer material: pools per kind, filled batch by batch ahead
of use, consumed exactly once.

Requests are sent to the dealer early (when a pool runs below half a batch) and their replies
wait in the channel's buffer, so the online phase does not wait for the dealer per op. All
dealer traffic is labelled ``dealer`` and so never counts in an op's rounds.

A service's supply (``batch_first_use=False``) sees batches of every size, and material is
keyed by shape. There a kind whose every component carries the batch axis (``row_split``) is
pooled by row, one pool for every size, a key's first use takes what it needs and one use
more (its second would wait too), and the pools of the other keys (a mask shared by a
batch's rows) are bounded: past ``pool_limit`` elements the least recently taken keys'
unused material is dropped. Every computing party takes the same material in the same order,
and both rules read only that sequence, so the parties keep asking the dealer for the same
batches; dropped material is never used by anyone.
"""

from __future__ import annotations

from collections import OrderedDict, deque

import numpy as np

from dealer.material import expand_shares, kind_key, layout, row_split
from dealer.service import LABEL, _canon
from mpcbandit.errors import MpcBanditError

__all__ = ["MaterialError", "MaterialSupply", "DEFAULT_BATCH_ELEMENTS", "DEFAULT_POOL_LIMIT",
           "engine_ahead_bytes"]

#: elements (all components) per batch the supply asks for at least
DEFAULT_BATCH_ELEMENTS = 1 << 16
#: a service's supply holds at most about this many unused elements (16 MiB) beyond the pools
#: of the key it took last
DEFAULT_POOL_LIMIT = 1 << 21
#: dealer replies a party may have waiting at once (requests go out early, several kinds each)
DEALER_REPLIES_AHEAD = 32


def engine_ahead_bytes(largest_elements: int, ops_ahead: int = 4) -> int:
    """The most bytes an engine peer sends a party before it reads them (an upper estimate):
    a few op messages of up to largest_elements ring elements, and the dealer's replies."""
    return 8 * (ops_ahead * largest_elements + DEALER_REPLIES_AHEAD * DEFAULT_BATCH_ELEMENTS)


class MaterialError(MpcBanditError):
    """Dealer material is exhausted, mismatched, or no dealer was configured."""


class MaterialSupply:
    """Pools of correlated randomness for one computing party."""

    def __init__(self, chan, dealer: str | None, index: int, n: int, *,
                 batch_elements: int = DEFAULT_BATCH_ELEMENTS, batch_first_use: bool = True,
                 pool_limit: int = DEFAULT_POOL_LIMIT):
        self.chan, self.dealer, self.index, self.n = chan, dealer, index, n
        #: a batch run takes the same shapes every step: a key's first use fetches a batch and
        #: refills ahead (no request mid-step later). A service's batches take every size from 1
        #: to serve.max_batch, and material fetched ahead for a size that does not come back is
        #: never used (half of it was): there a key's first use takes only what it needs, kinds
        #: are pooled by row where they can be, and the other pools are bounded (pool_limit).
        self.batch_first_use = batch_first_use
        self.batch_elements = batch_elements
        self.pool_limit = pool_limit
        self._pools: dict[tuple, deque] = {}      # key -> deque of [arrays, start, units]
        self._avail: dict[tuple, int] = {}        # key -> units left in its pool
        #: elements held in the pools (whole batches, until their last unit is taken)
        self.held_elements = 0
        #: keys with a pool, the least recently taken first (a service's supply)
        self._recent: OrderedDict[tuple, None] = OrderedDict()
        self._batch: dict[tuple, int] = {}        # key -> units per batch
        self._unit: dict[tuple, int] = {}         # key -> elements per unit
        self._flying: dict[tuple, int] = {}       # key -> requests in flight
        self._in_flight: deque = deque()          # (key, units, seq) in request order
        self._seq = 0
        self.units_taken: dict[tuple, int] = {}
        #: keys taken or asked for ahead: their next fetches come in batches, and refill ahead
        self._known: set[tuple] = set()

    # ---------------------------------------------------------------- requests

    def _request(self, key: tuple, units: int) -> None:
        if self.dealer is None:
            raise MaterialError(f"op needs dealer material {key[0]!r} but this engine has no dealer")
        self.chan.send(LABEL, self.dealer, {"seq": self._seq, "key": list(key), "units": units})
        self._in_flight.append((key, units, self._seq))
        self._flying[key] = self._flying.get(key, 0) + 1
        self._seq += 1

    def _receive_one(self) -> None:
        key, units, seq = self._in_flight.popleft()
        self._flying[key] -= 1
        msg = self.chan.recv(LABEL, self.dealer)
        if "error" in msg:
            raise MaterialError(f"dealer {self.dealer}: {msg['error']}")
        if (msg["seq"], _canon(msg["key"]), msg["units"]) != (seq, key, units):
            raise MaterialError(f"material mismatch: asked {self.dealer} for #{seq} {key} x {units}, "
                                f"got #{msg['seq']} {_canon(msg['key'])} x {msg['units']}")
        arrays = expand_shares(key[0], key[1:], units, msg["seed"],
                               corrected=msg["corrected"] == self.index,
                               corrections=msg.get("corr"))
        self._pools.setdefault(key, deque()).append([arrays, 0, units])
        self._avail[key] = self._avail.get(key, 0) + units
        self.held_elements += units * self._unit_elements(key)
        self._recent.setdefault(key)

    def _unit_elements(self, key: tuple) -> int:
        size = self._unit.get(key)
        if size is None:
            size = self._unit[key] = sum(int(np.prod(c.unit_shape, dtype=np.int64))
                                         for c in layout(key[0], key[1:]))
        return size

    def _batch_units(self, key: tuple) -> int:
        b = self._batch.get(key)
        if b is None:
            b = self._batch[key] = max(1, self.batch_elements // self._unit_elements(key))
        return b

    def _evict(self, keep: tuple) -> None:
        """Drop the unused material of the least recently taken keys but keep until the pools
        hold at most pool_limit elements; their next use is a first use again."""
        if self.held_elements <= self.pool_limit:
            return
        for key in list(self._recent):
            if self.held_elements <= self.pool_limit:
                return
            if key == keep:
                continue
            pool = self._pools.pop(key, ())
            self.held_elements -= sum(total for _, _, total in pool) * self._unit_elements(key)
            self._avail[key] = 0
            self._known.discard(key)
            del self._recent[key]

    def prefetch(self, kind: str, params: tuple = (), units: int | None = None) -> None:
        """Ask the dealer now for a batch of kind (offline phase); the reply is collected later."""
        key = kind_key(kind, params)
        self._known.add(key)   # asked for ahead: no first use
        self._request(key, units or self._batch_units(key))

    # ---------------------------------------------------------------- consumption

    def take(self, kind: str, params: tuple, units: int) -> dict[str, np.ndarray]:
        """The next units units of kind: each component as an array (units, *unit_shape)."""
        if not self.batch_first_use and (split := row_split(kind, params)):
            rows, row_params = split
            got = self._take(kind_key(kind, row_params), units * rows)
            return {n: a.reshape(units, rows, *a.shape[1:]) for n, a in got.items()}
        return self._take((kind, *params) if not params else kind_key(kind, params), units)

    def _take(self, key: tuple, units: int) -> dict[str, np.ndarray]:
        batch = self._batch_units(key)
        # a service's first use of a key takes what it needs and fetches nothing ahead
        lean = not self.batch_first_use and key not in self._known
        while self._avail.get(key, 0) < units:
            if self._flying.get(key):
                self._receive_one()
            else:
                need = units - self._avail.get(key, 0)
                self._request(key, need if lean else max(need, batch))
        pool = self._pools[key]
        parts: list[dict] = []
        need = units
        while need:
            entry = pool[0]
            arrays, start, total = entry
            k = min(need, total - start)
            parts.append({n: a[start:start + k] for n, a in arrays.items()})
            need -= k
            if start + k == total:
                pool.popleft()
                self.held_elements -= total * self._unit_elements(key)
            else:
                entry[1] = start + k
        self._avail[key] -= units
        self._known.add(key)
        self.units_taken[key] = self.units_taken.get(key, 0) + units
        ahead = max(batch, min(2 * units, 8 * batch))
        # refill ahead of use, so the next calls will not wait; after a service's first use,
        # one more use's worth: the second use found the pool empty and waited as the first
        # did (two one-way delays: 20 of a holder's 52 waits for the dealer at wan 40/s)
        if lean:
            self._request(key, units)
        elif self._avail[key] < ahead // 2 and not self._flying.get(key):
            self._request(key, ahead)
        if not self.batch_first_use:
            self._recent.setdefault(key)
            self._recent.move_to_end(key)
            self._evict(keep=key)
        if len(parts) == 1:
            return parts[0]
        return {n: np.concatenate([p[n] for p in parts]) for n in parts[0]}

    def close(self) -> None:
        """Collect replies still in flight and tell the dealer this party is done."""
        if self.dealer is None:
            return
        while self._in_flight:
            self._receive_one()
        self.chan.send(LABEL, self.dealer, {"bye": True})
