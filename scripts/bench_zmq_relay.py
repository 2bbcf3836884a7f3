"""The bare pyzmq relay SAMBA's timing goal is set against, measured here and now.

Same message pattern as one SAMBA step (K data-owner processes -> Controller -> Comp ->
Controller -> data owners; 36-byte scores, one batched list each way, 29-byte bits), no
cryptography, no bandit arithmetic, no channel layer: one ROUTER at the Controller, a DEALER
per other process. Run it beside scripts/bench_samba.py so both see the same machine load.

    python scripts/bench_zmq_relay.py --arms 10 100 --steps 2000
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time

SCORE, BIT = b"s" * 36, b"b" * 29


def _owner(addr: str, i: int, steps: int) -> None:
    import zmq

    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, f"do.{i}".encode())
    s.connect(addr)
    for _ in range(steps + 1):  # one warm-up step
        s.send(SCORE)
        s.recv()
    ctx.destroy(linger=1000)


def _comp(addr: str, arms: int, steps: int) -> None:
    import zmq

    ctx = zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, b"comp")
    s.connect(addr)
    for _ in range(steps + 1):
        s.recv()
        s.send(BIT * arms)
    ctx.destroy(linger=1000)


def relay_ms_per_step(arms: int, steps: int) -> float:
    """Milliseconds per relayed step with arms data-owner processes."""
    import socket

    import zmq

    with socket.socket() as probe:  # a free port; children start before any zmq context exists
        probe.bind(("127.0.0.1", 0))
        addr = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    fork = mp.get_context("fork")
    procs = [fork.Process(target=_owner, args=(addr, i, steps), daemon=True) for i in range(arms)]
    procs.append(fork.Process(target=_comp, args=(addr, arms, steps), daemon=True))
    for p in procs:
        p.start()
    ctx = zmq.Context()
    router = ctx.socket(zmq.ROUTER)
    router.bind(addr)
    comp_id = b"comp"
    t0 = 0.0
    for step in range(steps + 1):
        if step == 1:
            t0 = time.perf_counter()
        got = []
        while len(got) < arms:
            ident, body = router.recv_multipart()
            got.append(ident)
        router.send_multipart([comp_id, b"".join([SCORE] * arms)])
        while True:
            ident, body = router.recv_multipart()
            if ident == comp_id:
                break
        for ident in got:
            router.send_multipart([ident, BIT])
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join(30)
    ctx.destroy(linger=0)
    return 1e3 * elapsed / steps


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arms", nargs="+", type=int, default=[10, 100])
    ap.add_argument("--steps", type=int, default=2000)
    args = ap.parse_args(argv)
    print(" K  steps  ms/step  est_1e5_s  load1")
    for k in args.arms:
        load = os.getloadavg()[0]
        ms = relay_ms_per_step(k, args.steps)
        print(f"{k:3d}  {args.steps:5d}  {ms:7.3f}  {ms * 100:9.1f}  {load:5.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
