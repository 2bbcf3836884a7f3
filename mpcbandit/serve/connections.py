"""The API's connections, bounded: at most ``serve.max_connections`` open (one more is told 503
and closed, never accepted into a file-descriptor shortage), a request's head that does not
arrive within ``serve.read_timeout_s`` of its first byte (or of the connection's opening) and
a keep-alive connection silent for ``serve.idle_timeout_s`` are closed, each counted by reason;
and the event loop's own errors are logged once per kind with a count, not once each.

Each connection's aiohttp protocol is wrapped by a ``Guarded`` one that sees its bytes; the
app's middleware says when a request is being handled (``Guard.handling``), so a request that
waits for its batch is never taken for an idle connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable

from aiohttp import web

__all__ = ["Guard", "GuardedSite", "OncePerKind", "FILE_RESERVE"]

log = logging.getLogger("mpcbandit.serve")

#: open files kept free beyond the API's connections: the logs, checkpoints, the peers' sockets
FILE_RESERVE = 256
#: the answer to a connection beyond the limit, written before it is closed
_TOO_MANY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
             b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s")
_TOO_MANY_BODY = (b'{"error": "too many open connections to this party (serve.max_connections)'
                  b'; try again", "field": "connections"}')


class OncePerKind:
    """Logs the first event of each kind at WARNING, then how many more came, at most once
    every `every_s` seconds per kind: a flood of one fault is a few lines, not a log filled."""

    def __init__(self, logger: logging.Logger, every_s: float = 60.0):
        self.log, self.every_s = logger, every_s
        self._seen: dict[str, list] = {}   # kind -> [events not yet reported, last report time]

    def __call__(self, kind: str, text: str) -> None:
        now = time.monotonic()
        seen = self._seen.get(kind)
        if seen is None:
            self._seen[kind] = [0, now]
            self.log.warning("%s (logged once per %g s with a count)", text, self.every_s)
            return
        seen[0] += 1
        if now - seen[1] >= self.every_s:
            self.log.warning("%s: %d more in the last %.0f s", kind, seen[0], now - seen[1])
            seen[:] = [0, now]

    def loop_handler(self, _loop: asyncio.AbstractEventLoop, context: dict) -> None:
        """An event loop exception handler that logs each kind of error once with a count."""
        message = context.get("message", "event loop error")
        error = context.get("exception")
        self(message, f"{message}: {type(error).__name__}: {error}" if error else message)


class Guard:
    """The open connections of one API and the rules that close them."""

    def __init__(self, max_connections: int, read_timeout_s: float, idle_timeout_s: float,
                 closed: Callable[[str], Any], report: OncePerKind):
        self.max_connections = max_connections
        self.read_timeout_s, self.idle_timeout_s = read_timeout_s, idle_timeout_s
        self.closed, self.report = closed, report
        self.open: dict[Any, Guarded] = {}   # transport -> its connection

    def handling(self, transport) -> "Guarded | None":
        """The connection a request came on (None if it is gone)."""
        return self.open.get(transport)

    def sweep(self) -> None:
        """Close every connection past its read or idle timeout."""
        now = time.monotonic()
        for conn in list(self.open.values()):
            if conn.requests:
                continue
            if conn.head_since is not None and now - conn.head_since > self.read_timeout_s:
                self._close(conn, "read_timeout", "a request's head did not arrive within "
                            f"serve.read_timeout_s = {self.read_timeout_s:g} s")
            elif conn.head_since is None and now - conn.last > self.idle_timeout_s:
                self._close(conn, "idle", None)

    def _close(self, conn: "Guarded", reason: str, text: str | None) -> None:
        self.closed(reason)
        if text is not None:
            self.report(reason, f"closed a connection from {conn.peer}: {text}")
        conn.transport.close()

    async def sweeping(self) -> None:
        """Sweep until cancelled, a few times per the shorter timeout."""
        every = min(1.0, self.read_timeout_s / 4, self.idle_timeout_s / 4)
        while True:
            await asyncio.sleep(every)
            self.sweep()


class Guarded(asyncio.Protocol):
    """One connection: aiohttp's protocol inside, its head's first byte and its last activity
    seen from outside."""

    def __init__(self, guard: Guard, inner: asyncio.Protocol):
        self.guard, self.inner = guard, inner
        self.transport: Any = None
        self.peer = "?"
        self.requests = 0             # requests being handled on it
        self.head_since: float | None = None   # the first byte of a request not yet handled
        self.last = time.monotonic()

    def connection_made(self, transport) -> None:
        guard = self.guard
        self.transport, self.head_since = transport, time.monotonic()
        self.peer = str(transport.get_extra_info("peername") or "?")
        if len(guard.open) >= guard.max_connections:
            guard.closed("limit")
            guard.report("limit", f"refused a connection from {self.peer}: "
                         f"serve.max_connections = {guard.max_connections} are open")
            transport.write(_TOO_MANY % (len(_TOO_MANY_BODY), _TOO_MANY_BODY))
            transport.close()
            self.inner = None
            return
        guard.open[transport] = self
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        if self.head_since is None and not self.requests:
            self.head_since = time.monotonic()
        self.inner.data_received(data)

    def started(self) -> None:
        """A request's head arrived and is being handled."""
        self.requests += 1
        self.head_since = None

    def finished(self) -> None:
        """A request's answer is written."""
        self.requests -= 1
        self.last = time.monotonic()

    def eof_received(self):
        return None if self.inner is None else self.inner.eof_received()

    def connection_lost(self, exc) -> None:
        self.guard.open.pop(self.transport, None)
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


class GuardedSite(web.TCPSite):
    """aiohttp's TCP site with every connection wrapped by ``guard``."""

    def __init__(self, runner: web.AppRunner, host: str, port: int, guard: Guard, **kw):
        super().__init__(runner, host, port, **kw)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)   # registers the site with its runner
        server = self._runner.server
        # a TLS handshake is a request's head too: it may take no longer
        tls = {"ssl": self._ssl_context,
               "ssl_handshake_timeout": self.guard.read_timeout_s} if self._ssl_context else {}
        self._server = await asyncio.get_running_loop().create_server(
            lambda: Guarded(self.guard, server()), self._host, self._port,
            backlog=self._backlog, reuse_address=self._reuse_address, **tls)
