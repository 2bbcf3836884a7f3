"""One process of `mpcbandit bench transport`: times `exchange` rounds (ours) or the bare pyzmq
rounds of the same topology (raw) and prints its medians as JSON on stdout.

    python -m mpcbandit.experiments.transport_worker RANK N BASE MODE SIZES IPC [--quick] [--pin]

BASE is the first of N ports, IPC a folder for Unix sockets; MODE is ours|raw, with -curve
(CurveZMQ) and -ipc (Unix sockets) appended as wanted.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time

import numpy as np
import zmq
import zmq.utils.z85

from mpcbandit.net.channel import Channel
from mpcbandit.net.zmq_link import ZERO_COPY_BYTES, ZmqLink

__all__ = ["MODES", "WARMUP", "reps_for", "time_rounds"]

#: rounds run before timing starts (connections, caches, CURVE handshakes settle)
WARMUP = 50
MODES = {kind + curve + ipc for kind in ("ours", "raw") for curve in ("", "-curve")
         for ipc in ("", "-ipc")}


def reps_for(size: int, quick: bool) -> int:
    """Timed rounds at one payload size: about 256 MiB moved per party, 200 to 6000 rounds."""
    n = max(200, min(6000, (256 * 2**20) // max(size, 1) // 8))
    return max(100, n // 5) if quick else n


def _curve_keys(n: int) -> dict[str, tuple[bytes, bytes]]:
    """(public, secret) z85 CURVE keys of p.0 .. p.n-1, derived so every worker knows them."""
    keys = {}
    for i in range(n):
        secret = zmq.utils.z85.encode(bytes([i + 1]) * 32)
        keys[f"p.{i}"] = (zmq.curve_public(secret), secret)
    return keys


def time_rounds(rank: int, n: int, base: int, mode: str, sizes: list[int], quick: bool,
                ipc_dir: str, pin: bool) -> list[dict]:
    """Per payload size: the median round in µs, MB/s sent and process CPU per round."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (ours or raw, then -curve, then -ipc)")
    names = [f"p.{i}" for i in range(n)]
    me = names[rank]
    if pin:  # one core per process, the same placement for ours and raw
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    if "-ipc" in mode:  # Unix domain sockets: the parties share a host, no TCP stack
        addr = {nm: f"ipc://{ipc_dir}/{nm}" for nm in names}
    else:
        addr = {nm: f"tcp://127.0.0.1:{base + i}" for i, nm in enumerate(names)}
    peers = [nm for nm in names if nm != me]
    curve = "-curve" in mode
    keys = _curve_keys(n) if curve else {}
    if mode.startswith("ours"):
        setup = None
        if curve:
            from mpcbandit.net.security import CurveSetup, Keypair, Roster
            setup = CurveSetup(me, Keypair(*keys[me]), Roster({k: v[0] for k, v in keys.items()}))
        link = ZmqLink(me, addr[me], {p: addr[p] for p in peers}, max_bytes=64 * 2**20,
                       curve=setup)
        link.hello(30)
        chan = Channel(me, peers, link, session="bench", deadline_s=60, max_bytes=64 * 2**20)
    else:  # bare pyzmq, same topology: a ROUTER to receive, a DEALER per peer to send
        ctx = zmq.Context()
        router = ctx.socket(zmq.ROUTER)
        router.rcvtimeo = 60_000  # no wait without a deadline, in the floor too
        if curve:  # CURVE without an authenticator: the floor of the cipher alone
            router.curve_server = True
            router.curve_publickey, router.curve_secretkey = keys[me]
        router.bind(addr[me])
        dealers = []
        for p in peers:
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.ROUTING_ID, me.encode())
            if curve:
                d.curve_publickey, d.curve_secretkey = keys[me]
                d.curve_serverkey = keys[p][0]
            d.connect(addr[p])
            dealers.append(d)
        for d in dealers:  # a first round trip, so no round below waits for a connection
            d.send(b"hi")
        for _ in peers:
            router.recv_multipart()
    results = []
    for size in sizes:
        reps = reps_for(size, quick)
        payload = np.zeros(size, dtype=np.uint8)
        raw = bytes(size)
        times = []
        cpu0 = 0.0
        for r in range(reps + WARMUP):
            if r == WARMUP:
                ru = resource.getrusage(resource.RUSAGE_SELF)
                cpu0 = ru.ru_utime + ru.ru_stime
            t0 = time.perf_counter()
            if mode.startswith("ours"):
                chan.exchange("bench", send={p: payload for p in peers}, recv=peers)
            else:
                for d in dealers:  # the copy rule of ours: the floor gains what we gain
                    d.send(raw, copy=size < ZERO_COPY_BYTES)
                for _ in peers:
                    router.recv_multipart(copy=size < ZERO_COPY_BYTES)
            if r >= WARMUP:
                times.append(time.perf_counter() - t0)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        med = statistics.median(times)
        results.append({"size": size, "median_us": med * 1e6, "mb_s": size / med / 1e6,
                        "cpu_us": (ru.ru_utime + ru.ru_stime - cpu0) / reps * 1e6})
    if mode.startswith("ours"):
        chan.close()
    else:
        ctx.destroy(linger=1000)
    return results


def main(argv: list[str]) -> None:
    """The worker's command line (see the module's docstring)."""
    rank, n, base, mode, sizes, ipc_dir = argv[:6]
    results = time_rounds(int(rank), int(n), int(base), mode, [int(s) for s in sizes.split(",")],
                          "--quick" in argv, ipc_dir, "--pin" in argv)
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1:])
