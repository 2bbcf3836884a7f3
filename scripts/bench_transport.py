"""Transport benchmark: one `exchange` round vs raw pyzmq, 2 and 3 processes on one host over
TCP loopback and over Unix sockets (ipc), and with CurveZMQ on both sides (ours with its
authenticator, raw with the cipher alone). Runs use tcp only: ipc drops messages a peer wrote
before closing while the reader is at its high-water mark (docs/architecture.md).

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
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import zmq
import zmq.utils.z85

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpcbandit.launch import pick_base_port  # noqa: E402
from mpcbandit.net.channel import Channel  # noqa: E402
from mpcbandit.net.zmq_link import ZmqLink  # noqa: E402

SIZES = [8, 64, 1024, 8 * 1024, 64 * 1024, 512 * 1024, 2 * 2**20, 8 * 2**20]


def reps_for(size: int, quick: bool) -> int:
    n = max(200, min(6000, (256 * 2**20) // max(size, 1) // 8))
    return max(100, n // 5) if quick else n


def _curve_keys(n: int) -> dict[str, tuple[bytes, bytes]]:
    """(public, secret) z85 CURVE keys of p.0 .. p.n-1, derived so every worker knows them."""
    keys = {}
    for i in range(n):
        secret = zmq.utils.z85.encode(bytes([i + 1]) * 32)
        keys[f"p.{i}"] = (zmq.curve_public(secret), secret)
    return keys


def worker(rank: int, n: int, base: int, mode: str, sizes: list[int], quick: bool,
           ipc_dir: str, pin: bool) -> None:
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
        link = ZmqLink(me, addr[me], {p: addr[p] for p in peers}, max_bytes=64 * 2**20, curve=setup)
        link.hello(30)
        chan = Channel(me, peers, link, session="bench", deadline_s=60, max_bytes=64 * 2**20)
    else:  # bare pyzmq, same topology: a ROUTER to receive, a DEALER per peer to send
        ctx = zmq.Context()
        router = ctx.socket(zmq.ROUTER)
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
        for r in range(reps + 50):
            if r == 50:
                ru = resource.getrusage(resource.RUSAGE_SELF)
                cpu0 = ru.ru_utime + ru.ru_stime
            t0 = time.perf_counter()
            if mode.startswith("ours"):
                chan.exchange("bench", send={p: payload for p in peers}, recv=peers)
            else:
                for d in dealers:
                    d.send(raw, copy=size < 65536)
                for _ in peers:
                    router.recv_multipart(copy=size < 65536)
            if r >= 50:
                times.append(time.perf_counter() - t0)
        ru = resource.getrusage(resource.RUSAGE_SELF)
        med = statistics.median(times)
        results.append({"size": size, "median_us": med * 1e6, "mb_s": size / med / 1e6,
                        "cpu_us": (ru.ru_utime + ru.ru_stime - cpu0) / reps * 1e6})
    if mode.startswith("ours"):
        chan.close()
    else:
        ctx.destroy(linger=1000)
    print(json.dumps(results))


def run(n: int, mode: str, sizes: list[int], quick: bool, pin: bool) -> list[dict]:
    """One benchmark of n processes; per size, the median round over ranks and their CPU."""
    base = pick_base_port("127.0.0.1", n)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory(prefix="mpcbandit-bench-") as ipc_dir:
        procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(r), str(n), str(base),
                                   mode, ",".join(map(str, sizes)), ipc_dir]
                                  + (["--quick"] if quick else []) + (["--pin"] if pin else []),
                                  stdout=subprocess.PIPE, env=env, text=True) for r in range(n)]
        outs = [p.communicate(timeout=600)[0] for p in procs]
    if any(p.returncode for p in procs):
        raise SystemExit(f"benchmark worker failed: {[p.returncode for p in procs]}")
    per_rank = [json.loads(o) for o in outs]
    return [{"size": rows[0]["size"],
             "median_us": statistics.median(r["median_us"] for r in rows),
             "mb_s": statistics.median(r["mb_s"] for r in rows),
             "cpu_us": statistics.mean(r["cpu_us"] for r in rows)}
            for rows in zip(*per_rank)]


def fmt_size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n // 1024} KiB" if n < 2**20 else f"{n // 2**20} MiB"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        rank, n, base, mode, sizes, ipc_dir = sys.argv[2:8]
        worker(int(rank), int(n), int(base), mode, [int(s) for s in sizes.split(",")],
               "--quick" in sys.argv, ipc_dir, "--pin" in sys.argv)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    ap.add_argument("--repeats", type=int, default=3,
                    help="interleaved runs per variant; the fastest is reported (default 3)")
    ap.add_argument("--json", type=Path, help="also write the records here")
    ap.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=None,
                    help="payload sizes in bytes, comma-separated (default: 8 B .. 8 MiB)")
    ap.add_argument("--pin", action="store_true",
                    help="pin process r to core r mod cores (ours and raw alike): steadier "
                         "figures; unpinned, each process's thread and zmq's I/O thread share "
                         "the cores freely, and the fastest placement of a run decides its figure")
    ap.add_argument("--experiment", action="store_true",
                    help="also time the default experiment with CurveZMQ and without (full "
                         "runs, interleaved; about a minute) and print it against its critical "
                         "rounds x this run's raw 2-process round, with the busiest party's bytes")
    args = ap.parse_args()
    sizes = args.sizes or (SIZES[::2] + [SIZES[-1]] if args.quick else SIZES)
    records = []
    placement = "pinned, one core per process" if args.pin else "unpinned"
    print(f"load average {os.getloadavg()[0]:.2f}; {placement}; one round = send to every peer, receive from "
          f"every peer; best of {args.repeats} interleaved runs; cpu = process CPU (all threads) "
          "per round, per party")
    print(f"{'procs':>5} {'link':>4} {'security':>8} {'payload':>8} | {'ours us':>8} {'raw us':>8} {'ratio':>6} | "
          f"{'ours cpu':>8} {'raw cpu':>8} | {'ours MB/s':>9} {'raw MB/s':>9}")
    for n, transport, security in ((2, "tcp", "none"), (2, "ipc", "none"), (3, "tcp", "none"),
                                   (3, "ipc", "none"), (2, "tcp", "curve"), (2, "ipc", "curve")):
        suffix = ("-curve" if security == "curve" else "") + ("-ipc" if transport == "ipc" else "")
        case_sizes = sizes if security == "none" else [s for s in sizes if s <= 64 * 1024]
        ours, raw = [], []
        for _ in range(args.repeats):  # interleaved, so drifts of the machine hit both alike
            ours.append(run(n, "ours" + suffix, case_sizes, args.quick, args.pin))
            raw.append(run(n, "raw" + suffix, case_sizes, args.quick, args.pin))
        ours = [min(rows, key=lambda r: r["median_us"]) for rows in zip(*ours)]
        raw = [min(rows, key=lambda r: r["median_us"]) for rows in zip(*raw)]
        for o, r in zip(ours, raw):
            ratio = o["median_us"] / r["median_us"]
            print(f"{n:>5} {transport:>4} {security:>8} {fmt_size(o['size']):>8} | {o['median_us']:>8.1f} "
                  f"{r['median_us']:>8.1f} {ratio:>5.2f}x | {o['cpu_us']:>8.1f} {r['cpu_us']:>8.1f} | "
                  f"{o['mb_s']:>9.1f} {r['mb_s']:>9.1f}")
            records.append({"procs": n, "transport": transport, "security": security, "size": o["size"],
                            "ours_us": o["median_us"], "raw_us": r["median_us"], "ratio": ratio,
                            "ours_cpu_us": o["cpu_us"], "raw_cpu_us": r["cpu_us"],
                            "ours_mb_s": o["mb_s"], "raw_mb_s": r["mb_s"], "pinned": args.pin})
    if args.experiment:
        raw_round = min(r["raw_us"] for r in records
                        if (r["procs"], r["transport"], r["security"]) == (2, "tcp", "none"))
        records += experiment_curve_cost(args.repeats, raw_round)
    if args.json:
        args.json.write_text(json.dumps(records, indent=1))


def experiment_curve_cost(repeats: int, raw_round_us: float,
                          config: str = "configs/hannun-synthetic.toml") -> list[dict]:
    """CurveZMQ's cost on the default experiment (seconds per iteration with and without it),
    and issue 14's goal 3: seconds per iteration against critical rounds × the smallest raw
    2-process round of this run, and the busiest party's bytes per iteration."""
    import tempfile

    rows = {"curve": [], "none": []}
    summaries = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(repeats):
            for security in ("curve", "none"):  # interleaved: drifts of the machine hit both
                out = Path(tmp) / f"{security}-{r}"
                subprocess.run([sys.executable, "-m", "mpcbandit", "run", config, "--out", str(out),
                                "--set", f'run.security="{security}"'], cwd=ROOT, check=True,
                               capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                s = summaries[security] = json.loads((out / "summary.json").read_text())
                rows[security].append(s["protocol_wall_s"] / s["steps"])
    curve, none = statistics.median(rows["curve"]), statistics.median(rows["none"])
    print(f"\n{config} (protocol wall per iteration, median of {repeats}): CurveZMQ "
          f"{curve * 1e3:.2f} ms, security none {none * 1e3:.2f} ms, ratio {curve / none:.2f}x")
    s = summaries["curve"]
    rounds, busiest = s["critical_rounds_per_step"], s["bytes_per_step"]
    floor = rounds * raw_round_us * 1e-6
    print(f"goal 3: {curve * 1e3:.2f} ms per iteration (CurveZMQ) vs {rounds:.1f} critical rounds "
          f"x raw 2-process round {raw_round_us:.1f} us = {floor * 1e3:.2f} ms: {curve / floor:.1f}x "
          f"(goal 3x); busiest party {busiest / 1e3:.1f} KB per iteration (goal 150 KB)")
    return [{"experiment": config, "curve_s_per_iteration": curve, "none_s_per_iteration": none,
             "critical_rounds_per_step": rounds, "raw_round_us": raw_round_us,
             "vs_rounds_x_raw_round": curve / floor, "busiest_bytes_per_step": busiest}]

if __name__ == "__main__":
    main()
