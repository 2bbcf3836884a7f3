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
from mpcbandit.net.zmq_link import raise_file_limit
from mpcbandit.serve.access import api_token, bearer_matches, tls_context
from mpcbandit.serve.connections import FILE_RESERVE, Guard, GuardedSite, OncePerKind
from mpcbandit.serve.probes import ProbeListener
from mpcbandit.serve.backend import Backend
from mpcbandit.serve.metrics import CONTENT_TYPE_LATEST
from mpcbandit.serve.requests import max_body_bytes
from mpcbandit.serve.replies import Reply, error
from mpcbandit.serve.service import Service, ServiceRole

__all__ = ["make_app", "RunningService", "start_service", "drain_and_stop", "serve_forever",
           "run_service"]

log = logging.getLogger(__name__)

ROUTES = ("/v1/contexts", "/v1/decisions", "/v1/rewards", "/v1/health", "/metrics")


def _json(reply: Reply) -> web.Response:
    return web.Response(status=reply.status, body=json.dumps(reply.body).encode(),
                        content_type="application/json", headers=reply.headers)


async def _read_body(request: web.Request, limit: int) -> bytes | Reply:
    """The body, or a 400 naming it if it is larger than limit."""
    too_big = error(400, f"field 'body': larger than this party accepts ({limit} bytes)",
                    field="body")
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


def _counted_and_guarded(service: Service, token: str | None, guard: Guard | None):
    """The middleware of every listener: the bearer token checked, unknown routes answered in
    JSON, each request counted by route and status; a request marked on its connection (the
    guard's: a request being handled is never idle)."""

    @web.middleware
    async def count_and_guard(request: web.Request, handler):
        route = request.path if request.path in ROUTES else "other"
        conn = guard.handling(request.transport) if guard is not None else None
        if conn is not None:
            conn.started()
        try:
            response = await answer(request, handler)
        finally:
            if conn is not None:
                conn.finished()
        service.metrics.requests.labels(route, str(response.status)).inc()
        return response

    async def answer(request: web.Request, handler) -> web.StreamResponse:
        if token is not None and not bearer_matches(request.headers.get("Authorization"), token):
            return _json(Reply(401, {"error": "missing or wrong bearer token (header "
                                              "'Authorization: Bearer TOKEN')"},
                               {"WWW-Authenticate": 'Bearer realm="mpcbandit"'}))
        try:
            return await handler(request)
        except web.HTTPException as e:  # unknown route or method: JSON like the rest
            return _json(error(e.status, f"{e.reason}: {request.method} {request.path}"))

    return count_and_guard


def _add_probes(app: web.Application, service: Service) -> web.Application:
    """/v1/health and /metrics on app (the API's, and the probe listener's)."""

    async def health(_request: web.Request) -> web.Response:
        return _json(service.health())

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(body=service.metrics.text(),
                            headers={"Content-Type": CONTENT_TYPE_LATEST})

    app.router.add_get("/v1/health", health)
    app.router.add_get("/metrics", metrics)
    return app


def make_app(service: Service, token: str | None, guard: Guard) -> web.Application:
    """The aiohttp application of one party's API."""
    limit = max_body_bytes(service.role.features)
    read_timeout_s = service.serve.read_timeout_s
    posts = {"/v1/contexts": service.post_context, "/v1/decisions": service.post_decision,
             "/v1/rewards": service.post_reward}

    async def post(request: web.Request) -> web.Response:
        try:
            raw = await asyncio.wait_for(_read_body(request, limit), read_timeout_s)
        except asyncio.TimeoutError:
            return _json(Reply(408, {"error": "field 'body': did not arrive within "
                                              f"serve.read_timeout_s = {read_timeout_s:g} s",
                                     "field": "body"}, {"Connection": "close"}))
        if isinstance(raw, Reply):
            return _json(raw)
        return _json(await posts[request.path](raw))

    # aiohttp's own cap stays above ours, so an oversize body gets our 400, not its 413
    app = web.Application(middlewares=[_counted_and_guarded(service, token, guard)],
                          client_max_size=limit + 1024)
    for path in posts:
        app.router.add_post(path, post)
    return _add_probes(app, service)


def make_probe_app(service: Service, token: str | None) -> web.Application:
    """The probe listener's application: /v1/health and /metrics alone, the same token."""
    return _add_probes(web.Application(middlewares=[_counted_and_guarded(service, token, None)]),
                       service)


@dataclass
class RunningService:
    """A listening party API: its service (the backend's port), its URL, its server."""

    service: Service
    url: str
    runner: web.AppRunner
    sweeper: asyncio.Task | None = None
    #: the probe listener (serve.probe_port) and its URL, if there is one
    probes: ProbeListener | None = None
    probe_url: str | None = None


async def start_service(serve: ServeSection, role: ServiceRole, backend: Backend,
                        wal_path: Path) -> RunningService:
    """Read the log back, listen, start the backend; return once requests are answered."""
    token = api_token(serve)  # refuses an open bind without a token before anything listens
    tls = tls_context(serve)
    service = Service(serve, role, backend, wal_path)
    report = OncePerKind(log)
    asyncio.get_running_loop().set_exception_handler(report.loop_handler)
    guard = Guard(_connection_limit(serve), serve.read_timeout_s, serve.idle_timeout_s,
                  lambda reason: service.metrics.connections_closed.labels(reason).inc(), report)
    service.metrics.connections_open.set_function(lambda: len(guard.open))
    # the guard closes idle connections itself (counted); aiohttp's own keep-alive limit is
    # only a backstop behind it
    runner = web.AppRunner(make_app(service, token, guard), handle_signals=False,
                           access_log=None, keepalive_timeout=serve.idle_timeout_s + 60)
    await runner.setup()
    try:
        await GuardedSite(runner, serve.bind, serve.port, guard, backlog=1024,
                          ssl_context=tls).start()
    except OSError as e:
        await runner.cleanup()
        service.wal.close()
        raise OutputError(Path(f"{serve.bind}:{serve.port}"), e,
                          "listen on (serve.bind, serve.port)") from None
    host, port = runner.addresses[0][:2]
    await service.start()
    url = f"{'https' if tls else 'http'}://{host}:{port}"
    log.info("%s: API at %s (%s), %d record(s) read back from %s", role.party, url,
             ("TLS, " if tls else "") + ("bearer token required" if token else
                                          "client certificate required" if serve.tls_client_ca
                                          else "loopback, no token"),
             len(service.records), service.wal.path)
    running = RunningService(service, url, runner, asyncio.create_task(guard.sweeping()))
    if serve.probe_port >= 0:
        running.probes = ProbeListener(make_probe_app(service, token), serve.bind,
                                       serve.probe_port, tls)
        try:
            running.probe_url = running.probes.start(DRAIN_MARGIN_S)
        except OSError as e:
            await drain_and_stop(running, 0.0)
            raise OutputError(Path(f"{serve.bind}:{serve.probe_port}"), e,
                              "listen on (serve.bind, serve.probe_port)") from None
        log.info("%s: probes (/v1/health, /metrics) at %s, on a thread of their own",
                 role.party, running.probe_url)
    return running


def _connection_limit(serve: ServeSection) -> int:
    """serve.max_connections, lowered (with a warning) to what the open-file limit leaves
    beyond FILE_RESERVE: past it, accepting a connection would fail for want of a file."""
    files = raise_file_limit()
    fits = max(1, files - FILE_RESERVE)
    if serve.max_connections > fits:
        log.warning("serve.max_connections = %d lowered to %d: this process may open %d files "
                    "(ulimit -n) and keeps %d for its logs and peers", serve.max_connections,
                    fits, files, FILE_RESERVE)
        return fits
    return serve.max_connections


async def drain_and_stop(running: RunningService, deadline_s: float) -> None:
    """New requests get 503; open batches finish through the backend; then the server stops."""
    party = running.service.role.party
    log.info("%s: stopping: new requests get 503; finishing open batches (at most %g s)",
             party, deadline_s)
    await running.service.drain(deadline_s)
    if running.probes is not None:
        running.probes.stop(DRAIN_MARGIN_S)
    if running.sweeper is not None:
        running.sweeper.cancel()
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
