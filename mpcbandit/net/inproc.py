"""In-process link (threads + queues) with the ZeroMQ link's interface, for unit tests.

Frames are copied to bytes as they would be on a wire, so codec, tags and byte counts are
exercised exactly as over ZeroMQ; an array large enough to leave ZeroMQ uncopied becomes
read-only here too, so a test catches a write after sending. When one party's thread fails
the hub is aborted and every other party's wait ends at once with PartyFailed naming it.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Callable

from mpcbandit.errors import PartyFailed
from mpcbandit.net.channel import Channel
from mpcbandit.net.netspec import NetSpec
from mpcbandit.net.zmq_link import leaves_uncopied

__all__ = ["InprocHub", "InprocLink", "run_inproc"]


class InprocHub:
    """A switchboard of queues, one per party."""

    def __init__(self, names: list[str]):
        self.queues: dict[str, queue.Queue] = {n: queue.Queue() for n in names}
        self.failed: tuple[str, BaseException] | None = None
        self._lock = threading.Lock()

    def link(self, name: str) -> "InprocLink":
        return InprocLink(self, name)

    def abort(self, name: str, exc: BaseException) -> None:
        """Mark the run failed by name and wake every waiting party."""
        with self._lock:
            if self.failed is None:
                self.failed = (name, exc)
        for q in self.queues.values():
            q.put(None)


class InprocLink:
    """One party's end of an InprocHub."""

    def __init__(self, hub: InprocHub, name: str):
        self.hub, self.name = hub, name
        self._inbox = hub.queues[name]

    def send(self, peer: str, frames: list) -> None:
        for f in frames[1:]:  # array frames; the first is the envelope's bytes
            leaves_uncopied(f)
        self.hub.queues[peer].put((self.name, [bytes(f) for f in frames]))

    def try_send(self, peer: str, frames: list) -> bool:
        self.send(peer, frames)  # queues have no bound
        return True

    def wait_room(self, peer: str, timeout_s: float) -> bool:
        return True

    def forget(self, peer: str) -> None:
        pass

    def poll(self, timeout_s: float) -> tuple[str, list] | None:
        if self.hub.failed is not None:
            raise PartyFailed(self.hub.failed[0], repr(self.hub.failed[1]))
        try:
            item = self._inbox.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return None
        if item is None:
            raise PartyFailed(self.hub.failed[0], repr(self.hub.failed[1]))
        return item

    def close(self, linger_s: float | None = None) -> None:
        pass


def run_inproc(parties: dict[str, Callable[[Channel], Any]], *, deadline_s: float = 10.0,
               max_bytes: int = 256 * 2**20, net: NetSpec | None = None,
               peers: dict[str, list[str]] | None = None,
               max_buffered_bytes: int | None = None) -> tuple[dict[str, Any], dict[str, Channel]]:
    """Run fn(channel) for every party in its own thread; return results and channels.

    Re-raises the first party's exception (the culprit), not the failures it caused.
    """
    names = list(parties)
    hub = InprocHub(names)
    chans = {n: Channel(n, (peers or {}).get(n, [m for m in names if m != n]), hub.link(n),
                        session="inproc", deadline_s=deadline_s, max_bytes=max_bytes, net=net,
                        max_buffered_bytes=max_buffered_bytes)
             for n in names}
    results: dict[str, Any] = {}

    def body(name: str) -> None:
        try:
            results[name] = parties[name](chans[name])
        except BaseException as e:  # noqa: BLE001 - handed to the caller below
            hub.abort(name, e)

    threads = [threading.Thread(target=body, args=(n,), name=n, daemon=True) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if hub.failed is not None:
        raise hub.failed[1]
    return results, chans
