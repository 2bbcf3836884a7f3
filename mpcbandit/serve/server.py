"""The party's HTTP server (aiohttp: docs/measurements/serve-http-servers.md says why): routes, the
bearer token, body limits, and the process's life from listening to a drained SIGTERM."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from aiohttp import web

from mpcbandit.config import ServeSection
from mpcbandit.files import OutputError
from mpcbandit.serve import DRAIN_MARGIN_S
from mpcbandit.serve.access import api_token, bearer_matches
from mpcbandit.serve.backend import Backend
from mpcbandit.serve.metrics import CONTENT_TYPE_LATEST
from mpcbandit.serve.requests import max_body_bytes
from mpcbandit.serve.service import Reply, Service, ServiceRole

__all__ = ["make_app", "RunningService", "start_service", "drain_and_stop", "serve_forever",
           "run_service"]

log = logging.getLogger(__name__)

ROUTES = ("/v1/contexts", "/v1/decisions", "/v1/rewards", "/v1/health", "/metrics")


def _json(reply: Reply) -> web.Response:
    return web.Response(status=reply.status, body=json.dumps(reply.body).encode(),
                        content_type="application/json", headers=reply.headers)


async def _read_body(request: web.Request, limit: int) -> bytes | Reply:
    """The body, or a 400 naming it if it is larger than limit."""
    too_big = Reply(400, {"error": f"field 'body': larger than this party accepts ({limit} "
                                   "bytes)", "field": "body"})
    if request.content_length is not None and request.content_length > limit:
        return too_big
    chunks, size = [], 0
    while True:
        chunk = await request.content.readany()
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            return too_big
        chunks.append(chunk)


def make_app(service: Service, token: str | None) -> web.Application:
    """The aiohttp application of one party's API."""
    limit = max_body_bytes(service.role.features)
    posts = {"/v1/contexts": service.post_context, "/v1/decisions": service.post_decision,
             "/v1/rewards": service.post_reward}

    @web.middleware
    async def count_and_guard(request: web.Request, handler):
        route = request.path if request.path in ROUTES else "other"
        if token is not None and not bearer_matches(request.headers.get("Authorization"), token):
            response = _json(Reply(401, {"error": "missing or wrong bearer token (header "
                                                  "'Authorization: Bearer TOKEN')"},
                                   {"WWW-Authenticate": 'Bearer realm="mpcbandit"'}))
        else:
            try:
                response = await handler(request)
            except web.HTTPException as e:  # unknown route or method: JSON like the rest
                response = _json(Reply(e.status, {"error": f"{e.reason}: {request.method} "
                                                           f"{request.path}"}))
        service.metrics.requests.labels(route, str(response.status)).inc()
        return response

    async def post(request: web.Request) -> web.Response:
        raw = await _read_body(request, limit)
        if isinstance(raw, Reply):
            return _json(raw)
        return _json(await posts[request.path](raw))

    async def health(_request: web.Request) -> web.Response:
        return _json(service.health())

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=service.metrics.text(),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    # aiohttp's own cap stays above ours, so an oversize body gets our 400, not its 413
    app = web.Application(middlewares=[count_and_guard], client_max_size=limit + 1024)
    for path in posts:
        app.router.add_post(path, post)
    app.router.add_get("/v1/health", health)
    app.router.add_get("/metrics", metrics)
    return app


@dataclass
class RunningService:
    """A listening party API: its service (the backend's port), its URL, its server."""

    service: Service
    url: str
    runner: web.AppRunner


async def start_service(serve: ServeSection, role: ServiceRole, backend: Backend,
                        wal_path: Path) -> RunningService:
    """Read the log back, listen, start the backend; return once requests are answered."""
    token = api_token(serve)  # refuses an open bind without a token before anything listens
    service = Service(serve, role, backend, wal_path)
    runner = web.AppRunner(make_app(service, token), handle_signals=False, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, serve.bind, serve.port, backlog=1024).start()
    except OSError as e:
        await runner.cleanup()
        service.wal.close()
        raise OutputError(Path(f"{serve.bind}:{serve.port}"), e,
                          "listen on (serve.bind, serve.port)") from None
    host, port = runner.addresses[0][:2]
    await service.start()
    url = f"http://{host}:{port}"
    log.info("%s: API at %s (%s), %d record(s) read back from %s", role.party, url,
             "bearer token required" if token else "loopback, no token",
             len(service.records), service.wal.path)
    return RunningService(service, url, runner)


async def drain_and_stop(running: RunningService, deadline_s: float) -> None:
    """New requests get 503; open batches finish through the backend; then the server stops."""
    party = running.service.role.party
    log.info("%s: stopping: new requests get 503; finishing open batches (at most %g s)",
             party, deadline_s)
    await running.service.drain(deadline_s)
    await running.runner.cleanup()
    log.info("%s: drained", party)


async def serve_forever(serve: ServeSection, role: ServiceRole, backend: Backend, wal_path: Path,
                        on_listening: Callable[[str], None] | None = None) -> int:
    """Serve until SIGTERM (or SIGINT), drain, and return the exit status (0)."""
    running = await start_service(serve, role, backend, wal_path)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if on_listening is not None:
        on_listening(running.url)
    await stop.wait()
    await drain_and_stop(running, serve.decision_timeout_s + DRAIN_MARGIN_S)
    return 0


def run_service(serve: ServeSection, role: ServiceRole, backend: Backend, wal_path: Path,
                on_listening: Callable[[str], None] | None = None) -> int:
    """serve_forever in an event loop of its own: a party process's main."""
    return asyncio.run(serve_forever(serve, role, backend, wal_path, on_listening))
