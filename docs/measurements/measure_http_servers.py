"""Measure the HTTP servers `mpcbandit serve` could stand on, for the /v1/decisions shape.

Each server runs the same tiny app in its own process (pinned to CPU 0): POST /v1/decisions
{"id": str} -> 200 {"id", "arm"}. Two shapes:

- ``now``: the arm is answered at once (the server's own cost per request);
- ``batch``: the request waits until a backend thread, waking every 5 ms, decides everything
  that arrived meanwhile (the service's real shape: a request waits for its batch).

A closed-loop load generator (this process, pinned to CPU 1) keeps C keep-alive connections
busy for a fixed time and reports requests per second, p50/p99 latency and the server's CPU
seconds per request. Loopback only; every loop is bounded in time. ``shell`` is mpcbandit's
own serve shell on the chosen server (checks, the log's fsync, the batching window), with a
backend that decides at once: what the shell costs before any MPC.

    python docs/measurements/measure_http_servers.py      # every server found, 3 x 4 s a cell
    python docs/measurements/measure_http_servers.py --seconds 2 --servers stdlib aiohttp
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time

SERVERS = ("stdlib", "aiohttp", "uvicorn", "shell")
#: request ids never repeat across the runs of one measurement (the shell refuses a repeat)
RUN = os.urandom(4).hex()
BATCH_S = 0.005
ARM = 3


# ---------------------------------------------------------------- the apps under test


class Batcher:
    """Resolves every waiting request every BATCH_S seconds, from a thread of its own (a
    stand-in for the backend: BATCH_S is its decision latency)."""

    def __init__(self, resolve_threadsafe):
        self.pending: list = []
        self.lock = threading.Lock()
        self.resolve = resolve_threadsafe
        threading.Thread(target=self._loop, daemon=True).start()

    def add(self, waiter) -> None:
        with self.lock:
            self.pending.append(waiter)

    def _loop(self) -> None:
        while True:
            time.sleep(BATCH_S)
            with self.lock:
                batch, self.pending = self.pending, []
            for waiter in batch:
                self.resolve(waiter, ARM)


def serve_stdlib(port: int, shape: str) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Waiter:
        def __init__(self):
            self.event, self.arm = threading.Event(), None

    def resolve(w, arm):
        w.arm = arm
        w.event.set()

    batcher = Batcher(resolve) if shape == "batch" else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body leave in two writes: with Nagle on, the body waits for the
        # client's delayed ACK (40 ms a request on Linux)
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            arm = ARM
            if batcher:
                w = Waiter()
                batcher.add(w)
                w.event.wait(5)
                arm = w.arm
            out = json.dumps({"id": body["id"], "arm": arm}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 1024  # the default 5 drops a burst of connects
    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def _async_batcher(shape: str):
    if shape != "batch":
        return None
    loop = asyncio.get_running_loop()
    return Batcher(lambda fut, arm: loop.call_soon_threadsafe(fut.set_result, arm))


def serve_aiohttp(port: int, shape: str) -> None:
    from aiohttp import web

    async def decide(request):
        body = json.loads(await request.read())
        arm = ARM
        if state["batcher"]:
            fut = asyncio.get_running_loop().create_future()
            state["batcher"].add(fut)
            arm = await asyncio.wait_for(fut, 5)
        return web.json_response({"id": body["id"], "arm": arm})

    state = {}

    async def start(app):
        state["batcher"] = _async_batcher(shape)

    app = web.Application()
    app.router.add_post("/v1/decisions", decide)
    app.on_startup.append(start)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def serve_uvicorn(port: int, shape: str) -> None:
    import uvicorn

    state = {}

    async def app(scope, receive, send):
        if scope["type"] == "lifespan":
            while True:
                msg = await receive()
                if msg["type"] == "lifespan.startup":
                    state["batcher"] = _async_batcher(shape)
                    await send({"type": "lifespan.startup.complete"})
                elif msg["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        raw, more = b"", True
        while more:
            msg = await receive()
            raw += msg.get("body", b"")
            more = msg.get("more_body", False)
        body = json.loads(raw)
        arm = ARM
        if state["batcher"]:
            fut = asyncio.get_running_loop().create_future()
            state["batcher"].add(fut)
            arm = await asyncio.wait_for(fut, 5)
        out = json.dumps({"id": body["id"], "arm": arm}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"),
                                (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False,
                http="httptools", loop="asyncio", lifespan="on")


class InstantBackend:
    """Decides every batch at once (arm 3): the shell's own cost, no MPC."""

    def start(self, port) -> None:
        port.report(ready=True, peers={}, step=0)
        threading.Thread(target=self._pull, args=(port,), daemon=True).start()

    def _pull(self, port) -> None:
        while not port.drained("decisions"):
            batch = port.next_batch("decisions", wait_s=0.1)
            for ticket in batch.items if batch else ():
                ticket.decide(ARM, batch.number)

    def missing(self, request_id: str) -> list:
        return []

    def stop(self, deadline_s: float) -> None:
        pass


def serve_shell(port: int, shape: str) -> None:
    """mpcbandit's own serve shell (its server, checks, log with fsync, batching window)."""
    import dataclasses
    import logging
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository's root
    from mpcbandit.config import ServeSection
    from mpcbandit.serve.server import run_service
    from mpcbandit.serve.service import ServiceRole

    logging.disable(logging.INFO)  # a line per batch is for operators, not for this loop
    serve = dataclasses.replace(ServeSection(), port=port, max_batch=256,
                                batch_ms=1e3 * BATCH_S if shape == "batch" else 0.0)
    with tempfile.TemporaryDirectory() as folder:
        run_service(serve, ServiceRole("arm_puller.0", decides=True), InstantBackend(),
                    Path(folder) / "party.wal")


# ---------------------------------------------------------------- the load generator


def request_bytes(i: int) -> bytes:
    body = json.dumps({"id": f"{RUN}-{i}"}).encode()
    return (b"POST /v1/decisions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
            b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))


async def one_connection(port: int, stop_at: float, latencies: list, errors: list, base: int,
                         interval_s: float = 0.0):
    """Requests one after another (closed loop), or one every interval_s (open loop: latency
    counts from the request's scheduled time, so a server that falls behind is seen)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    i = base
    due = time.perf_counter() + interval_s * (base % 1000) / 1000  # spread the connections
    try:
        while time.perf_counter() < stop_at:
            t0 = time.perf_counter()
            if interval_s:
                if due > t0:
                    await asyncio.sleep(due - t0)
                t0, due = due, due + interval_s
            try:
                await exchange(reader, writer, i, latencies, errors, t0)
            except (asyncio.TimeoutError, OSError, asyncio.IncompleteReadError) as e:
                errors.append(repr(e))
                return
            i += 1
    finally:
        writer.close()


async def exchange(reader, writer, i: int, latencies: list, errors: list, t0: float) -> None:
    """One request and its answer on a kept-alive connection; its latency recorded."""
    writer.write(request_bytes(i))
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    body = await asyncio.wait_for(reader.readexactly(length), 10)
    if not head.startswith(b"HTTP/1.1 200") or b'"arm"' not in body:
        errors.append(head[:40])
    latencies.append(time.perf_counter() - t0)


async def load(port: int, connections: int, seconds: float,
               rate: float = 0.0) -> tuple[list, list]:
    """Latencies and errors of C connections for seconds (at rate requests/s in all if given)."""
    latencies, errors = [], []
    stop_at = time.perf_counter() + seconds
    base = int(time.monotonic() * 1e3) * 10**6
    interval = connections / rate if rate else 0.0
    await asyncio.gather(*(one_connection(port, stop_at, latencies, errors,
                                          base + k * 10**5 + k * 1000 // connections, interval)
                           for k in range(connections)))
    return latencies, errors


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process and its threads (from /proc)."""
    fields = open(f"/proc/{pid}/stat").read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, proc: subprocess.Popen, deadline_s: float = 20) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"server on port {port} not listening within {deadline_s} s")


def measure(server: str, shape: str, connections: int, seconds: float, rate: float = 0.0) -> dict:
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--serve", server, "--shape", shape,
                             "--port", str(port), "--batch-ms", str(BATCH_S * 1e3)])
    try:
        wait_listening(port, proc)
        asyncio.run(load(port, 4, 0.5))  # warm up
        cpu0 = cpu_seconds(proc.pid)
        t0 = time.perf_counter()
        latencies, errors = asyncio.run(load(port, connections, seconds, rate))
        wall = time.perf_counter() - t0
        cpu = cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    latencies.sort()
    n = len(latencies)
    return {"server": server, "shape": shape, "connections": connections, "requests": n,
            "errors": len(errors), "rps": n / wall,
            "p50_ms": 1e3 * latencies[n // 2] if n else float("nan"),
            "p99_ms": 1e3 * latencies[min(n - 1, int(n * 0.99))] if n else float("nan"),
            "cpu_us_per_request": 1e6 * cpu / n if n else float("nan")}


def available(server: str) -> bool:
    module = {"stdlib": "http.server", "aiohttp": "aiohttp", "uvicorn": "uvicorn",
              "shell": "aiohttp"}[server]
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", choices=SERVERS, help=argparse.SUPPRESS)
    ap.add_argument("--shape", choices=("now", "batch"), default="now")
    ap.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--servers", nargs="+", choices=SERVERS, default=list(SERVERS))
    ap.add_argument("--connections", nargs="+", type=int, default=[16, 128])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--repeat", type=int, default=3, help="runs per cell; the median is shown")
    ap.add_argument("--rate", nargs="+", type=float, default=[0.0],
                    help="offered requests/s in all (open loop); 0: as fast as answered")
    ap.add_argument("--shapes", nargs="+", choices=("now", "batch"), default=["now", "batch"])
    ap.add_argument("--batch-ms", type=float, default=5.0,
                    help="the batch shape's decision latency (the backend's, in ms)")
    args = ap.parse_args()
    global BATCH_S
    BATCH_S = args.batch_ms / 1e3
    if args.serve:
        if hasattr(os, "sched_setaffinity") and os.cpu_count() > 1:
            os.sched_setaffinity(0, {0})
        {"stdlib": serve_stdlib, "aiohttp": serve_aiohttp, "uvicorn": serve_uvicorn,
         "shell": serve_shell}[args.serve](args.port, args.shape)
        return
    if hasattr(os, "sched_setaffinity") and os.cpu_count() > 1:
        os.sched_setaffinity(0, {1})
    print(f"batch shape: decided every {args.batch_ms:g} ms")
    print("| server | shape | connections | offered/s | requests/s | p50 ms | p99 ms | server CPU "
          "µs/request | errors |\n|---|---|---|---|---|---|---|---|---|", flush=True)
    for server in args.servers:
        if not available(server):
            print(f"| {server} | not installed | | | | | | | |", flush=True)
            continue
        for shape in args.shapes:
            for c in args.connections:
                for rate in args.rate:
                    runs = sorted((measure(server, shape, c, args.seconds, rate)
                                   for _ in range(args.repeat)), key=lambda r: r["rps"])
                    r = runs[len(runs) // 2]  # the run of median throughput
                    print(f"| {server} | {shape} | {c} | {rate:,.0f} | {r['rps']:,.0f} | "
                          f"{r['p50_ms']:.2f} | {r['p99_ms']:.2f} | "
                          f"{r['cpu_us_per_request']:.0f} | {r['errors']} |", flush=True)


if __name__ == "__main__":
    main()
