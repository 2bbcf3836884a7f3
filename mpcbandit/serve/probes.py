"""A listener of its own for the probes (`serve.probe_port`): an aiohttp app run on a thread
with its own event loop, so that a load balancer's health check and Prometheus's scrape are
answered however busy the API's loop is (an overloaded arm-puller with thousands of decisions
open stopped answering its own /v1/health and /metrics)."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future

from aiohttp import web

__all__ = ["ProbeListener"]

log = logging.getLogger("mpcbandit.serve")


class ProbeListener:
    """Serves `app` on bind:port (HTTPS with a TLS context) from a thread of its own until
    stopped."""

    def __init__(self, app: web.Application, bind: str, port: int, tls=None):
        self.app, self.bind, self.port, self.tls = app, bind, port, tls
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="probes",
                                        daemon=True)

    def start(self, deadline_s: float) -> str:
        """Listen; the URL (an OSError if the address cannot be bound)."""
        self._thread.start()
        listening: Future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        try:
            return listening.result(deadline_s)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise

    async def _listen(self) -> str:
        self._runner = web.AppRunner(self.app, handle_signals=False, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.bind, self.port, ssl_context=self.tls)
        try:
            await site.start()
        except OSError:
            await self._runner.cleanup()
            raise
        host, port = self._runner.addresses[0][:2]
        return f"{'https' if self.tls else 'http'}://{host}:{port}"

    def stop(self, deadline_s: float) -> None:
        """Stop listening and end the thread (at most deadline_s)."""
        if self._runner is not None and self._loop.is_running():
            try:
                asyncio.run_coroutine_threadsafe(self._runner.cleanup(),
                                                 self._loop).result(deadline_s)
            except Exception as e:  # noqa: BLE001 - the API's drain goes on regardless
                log.warning("the probe listener did not stop cleanly: %s", e)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(deadline_s)
