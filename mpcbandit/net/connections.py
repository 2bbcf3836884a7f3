"""Whether a ZeroMQ link's connection to each peer is up: a socket monitor per peer's DEALER,
read when asked, so a dropped connection is logged at once and a peer whose connection
stays down can be named (the channel's watch, peer_control.py)."""

from __future__ import annotations

import logging
import time

import zmq
from zmq.utils.monitor import recv_monitor_message

__all__ = ["ConnectionWatch", "stop_monitor"]

log = logging.getLogger("mpcbandit.net")

_LINK_EVENTS = zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED


def stop_monitor(sock: zmq.Socket, mon: zmq.Socket) -> None:
    """Stop sock's monitor and close its socket. libzmq's last event (MONITOR_STOPPED) waits
    for room in the monitor's queue, so events left unread (a peer failing to connect again
    and again fills it) would block disable_monitor for ever: they are read first."""
    while mon.poll(0):
        mon.recv_multipart()
    sock.disable_monitor()
    mon.close(linger=0)


class ConnectionWatch:
    """The up and down events of each peer's connection, and how long one has been down."""

    def __init__(self) -> None:
        self._monitors: dict[str, zmq.Socket] = {}
        self._down_since: dict[str, float | None] = {}

    def watch(self, peer: str, sock: zmq.Socket) -> None:
        """Monitor sock, the connection to peer (before it connects: its first event is that)."""
        self._monitors[peer] = sock.get_monitor_socket(_LINK_EVENTS)

    def down_for(self, peer: str) -> float | None:
        """Seconds the connection to peer has been down after it was up, else None."""
        mon = self._monitors.get(peer)
        while mon is not None and mon.poll(0):
            event = recv_monitor_message(mon)["event"]
            if event == zmq.EVENT_CONNECTED:
                if self._down_since.get(peer) is not None:
                    log.warning("connection to %s is back after %.1f s", peer,
                                time.monotonic() - self._down_since[peer])
                self._down_since[peer] = None
            elif event == zmq.EVENT_DISCONNECTED and self._down_since.get(peer) is None:
                log.warning("connection to %s dropped", peer)
                self._down_since[peer] = time.monotonic()
        since = self._down_since.get(peer)
        return None if since is None else time.monotonic() - since

    def stop(self, peer: str, sock: zmq.Socket) -> None:
        """Stop watching peer's connection, sock (before sock closes)."""
        mon = self._monitors.pop(peer, None)
        if mon is not None:
            stop_monitor(sock, mon)
        self._down_since.pop(peer, None)
