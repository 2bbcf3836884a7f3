"""The start of a ZeroMQ link: greet every peer, wait (bounded, logged) until every peer has
greeted us, and keep what arrives meanwhile for later, capped per peer. What a greeting says
is handshake.py's; on the wire a hello is an empty frame and the greeting."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Callable, Mapping

import zmq

from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.net.security import PartyAuthenticator
from mpcbandit.stop import check_stop

__all__ = ["Hello", "HELLO_TAG", "DEFAULT_GREETING"]

log = logging.getLogger("mpcbandit.net")

HELLO_TAG = b""
#: the greeting of a link that is not told what to say
DEFAULT_GREETING = b"hello"
#: seconds between "waiting for hello" log lines
_WAIT_LOG_S = 5.0
#: refused keys quoted in a hello timeout (the rest are counted)
_REFUSED_SHOWN = 3
#: how often a party waiting for hellos looks for a request to stop
_STOP_CHECK_S = 0.5


class Hello:
    """A link's wait for every peer's hello, and the messages that arrive before it completes."""

    def __init__(self, peers: Mapping[str, str], dealers: Mapping[str, zmq.Socket],
                 recv: Callable[[float], tuple[str, list] | None],
                 auth: PartyAuthenticator | None):
        """dealers: the link's sockets to its peers (a hello goes through each); recv: the
        link's receive; auth: whose refused keys a timeout names."""
        self._peers, self._dealers, self._recv, self._auth = peers, dealers, recv, auth
        #: messages that arrived before the hello completed: the link hands them over first
        self.pending: deque = deque()
        # the peers' hellos, what they sent meanwhile, the next log line: kept across attempts
        self._greetings: dict[str, bytes] = {}
        self._pending_bytes: dict[str, int] = {}
        self._next_log = 0.0

    def greet(self, timeout_s: float, greeting: bytes = DEFAULT_GREETING,
              max_pending_bytes: int | None = None) -> dict[str, bytes]:
        """Greet every peer and wait until each has greeted us; their greetings (ZmqLink.hello)."""
        for d in self._dealers.values():
            d.send_multipart([HELLO_TAG, greeting])
        greetings, pending_bytes = self._greetings, self._pending_bytes
        deadline = time.monotonic() + timeout_s
        next_log = self._next_log
        while len(greetings) < len(self._peers):
            now = time.monotonic()
            waiting = sorted(set(self._peers) - set(greetings))
            if now >= next_log:
                log.info("waiting for hello from %s (%.0f s left)", ", ".join(waiting), deadline - now)
                next_log = self._next_log = now + _WAIT_LOG_S
            check_stop()
            remaining = min(deadline, next_log, now + _STOP_CHECK_S) - now
            got = self._recv(remaining) if remaining > 0 else None
            if got is None:
                if time.monotonic() >= deadline:
                    raise self._timeout(waiting, timeout_s)
                continue
            if got[1][0] == HELLO_TAG:
                if got[0] in self._peers and got[0] not in greetings:
                    greetings[got[0]] = bytes(got[1][1]) if len(got[1]) > 1 else b""
            else:
                sender, frames = got
                held = pending_bytes.get(sender, 0) + sum(len(f) for f in frames)
                if max_pending_bytes is not None and held > max_pending_bytes:
                    raise ProtocolError(sender, "?", f"{held} unread bytes sent before the hello "
                                        f"completed, above the cap of {max_pending_bytes} "
                                        "(run.max_buffered_mb): a peer flooding")
                pending_bytes[sender] = held
                self.pending.append(got)
        log.info("hello from every peer: %s", ", ".join(sorted(greetings)))
        return greetings

    def not_greeted(self) -> list[str]:
        """The peers whose hello has not arrived yet (sorted)."""
        return sorted(set(self._peers) - set(self._greetings))

    def _timeout(self, waiting: list[str], timeout_s: float) -> PeerTimeout:
        err = PeerTimeout(", ".join(waiting), "hello", timeout_s)
        refused = sorted(set(self._auth.refused)) if self._auth is not None else []
        if refused:
            shown = ", ".join(refused[:_REFUSED_SHOWN])
            more = f" and {len(refused) - _REFUSED_SHOWN} more" if len(refused) > _REFUSED_SHOWN else ""
            err.args = (f"{err}; refused {len(refused)} connection(s) with unknown CURVE "
                        f"key(s): {shown}{more}",)
        return err
