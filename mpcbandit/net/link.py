"""What the channel asks of a link: frames between named parties (zmq_link.ZmqLink over ZeroMQ,
inproc for threads)."""

from __future__ import annotations

from typing import Protocol

__all__ = ["Link"]


class Link(Protocol):
    """Moves frames between parties; ``poll`` names the authenticated sender.

    ``try_send`` never waits (False: not queued); ``forget(peer)`` lets what is queued for a
    finished peer leave (bounded) and never connects to it again. A link may also offer
    ``down_for(peer) -> float | None`` (seconds its connection to peer has been down); the
    channel then names a dead peer within GONE_S.
    """

    def send(self, peer: str, frames: list) -> None: ...

    def try_send(self, peer: str, frames: list) -> bool: ...

    def poll(self, timeout_s: float) -> tuple[str, list] | None: ...

    def forget(self, peer: str) -> None: ...

    def close(self, linger_s: float | None = None) -> None: ...
