"""Transport benchmark: one `exchange` round vs raw pyzmq, 2 and 3 processes on loopback.

Each party sends the payload to every other party and then receives theirs (all-to-all):
with our Channel (codec, tags, buffering, accounting) and with bare pyzmq sockets of the same
topology (a ROUTER to receive, a DEALER per peer to send). Prints the median time of one round
in microseconds and the throughput (payload bytes sent per party per second).

    python scripts/bench_transport.py [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import zmq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpcbandit.launch import pick_base_port  # noqa: E402
from mpcbandit.net.channel import Channel  # noqa: E402
from mpcbandit.net.zmq_link import ZmqLink  # noqa: E402

SIZES = [8, 64, 1024, 8 * 1024, 64 * 1024, 512 * 1024, 2 * 2**20, 8 * 2**20]


def reps_for(size: int, quick: bool) -> int:
    n = max(20, min(2000, (256 * 2**20) // max(size, 1) // 8))
    return max(10, n // 10) if quick else n


def worker(rank: int, n: int, base: int, mode: str, sizes: list[int], quick: bool) -> None:
    names = [f"p.{i}" for i in range(n)]
    me = names[rank]
    addr = {nm: f"tcp://127.0.0.1:{base + i}" for i, nm in enumerate(names)}
    peers = [nm for nm in names if nm != me]
    if mode == "ours":
        link = ZmqLink(me, addr[me], {p: addr[p] for p in peers}, max_bytes=64 * 2**20)
        link.hello(30)
        chan = Channel(me, peers, link, session="bench", deadline_s=60, max_bytes=64 * 2**20)
    else:  # bare pyzmq, same topology: a ROUTER to receive, a DEALER per peer to send
        ctx = zmq.Context()
        router = ctx.socket(zmq.ROUTER)
        router.bind(addr[me])
        dealers = []
        for p in peers:
            d = ctx.socket(zmq.DEALER)
            d.setsockopt(zmq.ROUTING_ID, me.encode())
            d.connect(addr[p])
            dealers.append(d)
    results = []
    for size in sizes:
        reps = reps_for(size, quick)
        payload = np.zeros(size, dtype=np.uint8)
        raw = bytes(size)
        times = []
        for r in range(reps + 5):
            t0 = time.perf_counter()
            if mode == "ours":
                chan.exchange("bench", send={p: payload for p in peers}, recv=peers)
            else:
                for d in dealers:
                    d.send(raw, copy=size < 65536)
                for _ in peers:
                    router.recv_multipart(copy=size < 65536)
            if r >= 5:
                times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        results.append({"size": size, "median_us": med * 1e6, "mb_s": size / med / 1e6})
    if mode == "ours":
        chan.close()
    else:
        ctx.destroy(linger=1000)
    if rank == 0:
        print(json.dumps(results))


def run(n: int, mode: str, sizes: list[int], quick: bool) -> list[dict]:
    base = pick_base_port("127.0.0.1", n)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(n), str(base), mode,
                               ",".join(map(str, sizes))] + (["--quick"] if quick else []),
                              stdout=subprocess.PIPE, env=env, text=True) for r in range(n)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"benchmark worker failed: {[p.returncode for p in procs]}")
    return json.loads(outs[0])


def fmt_size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n // 1024} KiB" if n < 2**20 else f"{n // 2**20} MiB"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        rank, n, base, mode, sizes = sys.argv[2:7]
        worker(int(rank), int(n), int(base), mode, [int(s) for s in sizes.split(",")],
               "--quick" in sys.argv)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    ap.add_argument("--json", type=Path, help="also write the records here")
    args = ap.parse_args()
    sizes = SIZES[::2] + [SIZES[-1]] if args.quick else SIZES
    records = []
    print(f"load average {os.getloadavg()[0]:.2f}; one round = send to every peer, receive from every peer")
    print(f"{'procs':>5} {'payload':>8} | {'ours us':>9} {'raw us':>9} {'overhead':>9} | "
          f"{'ours MB/s':>9} {'raw MB/s':>9}")
    for n in (2, 3):
        ours, raw = run(n, "ours", sizes, args.quick), run(n, "raw", sizes, args.quick)
        for o, r in zip(ours, raw):
            over = o["median_us"] - r["median_us"]
            pct = 100 * over / r["median_us"]
            print(f"{n:>5} {fmt_size(o['size']):>8} | {o['median_us']:>9.1f} {r['median_us']:>9.1f} "
                  f"{over:>+6.1f}us/{pct:>+4.0f}% | {o['mb_s']:>9.1f} {r['mb_s']:>9.1f}")
            records.append({"procs": n, "size": o["size"], "ours_us": o["median_us"],
                            "raw_us": r["median_us"], "ours_mb_s": o["mb_s"], "raw_mb_s": r["mb_s"]})
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


if __name__ == "__main__":
    main()
