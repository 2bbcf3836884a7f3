"""The bare pyzmq relay SAMBA's timing goal is set against: `mpcbandit bench samba-relay`.

The same message pattern as one SAMBA step (K data-owner processes -> Controller -> Comp ->
Controller -> data owners; 36-byte scores, one batched list each way, 29-byte bits), with no
cryptography, no bandit arithmetic and no channel layer: one ROUTER at the Controller, a DEALER
per other process.
"""

from __future__ import annotations

import multiprocessing as mp
import socket
import time

import click

from mpcbandit.experiments.common import Output, experiment_command, int_list

__all__ = ["relay_ms_per_step", "bench"]

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
    """Milliseconds per relayed step with `arms` data-owner processes (the first step untimed)."""
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
            ident, _ = router.recv_multipart()
            got.append(ident)
        router.send_multipart([comp_id, b"".join([SCORE] * arms)])
        while router.recv_multipart()[0] != comp_id:
            pass
        for ident in got:
            router.send_multipart([ident, BIT])
    elapsed = time.perf_counter() - t0
    for p in procs:
        p.join(30)
    ctx.destroy(linger=0)
    return 1e3 * elapsed / steps


@experiment_command("samba-relay", "the same as the defaults (the relay has no paper size)")
@click.option("--arms", type=int_list, default="10,100", help="The values of K.")
@click.option("--steps", type=click.IntRange(min=1), default=2000, help="Relayed steps timed.")
def bench(out: Output, paper: bool, arms: list[int], steps: int) -> None:
    """Milliseconds per step of a bare pyzmq relay with SAMBA's message pattern and process
    count (K data owners, Controller, Comp), and the 10^5-step time it implies: the floor
    `mpcbandit figure samba-8` prints beside every secure point. Writes samba_relay (.csv, .md).
    """
    rows = []
    click.echo(" K  steps  ms/step  est_1e5_s")
    for k in arms:
        ms = relay_ms_per_step(k, steps)
        rows.append([k, steps, round(ms, 4), round(ms * 100, 1)])
        click.echo(f"{k:3d}  {steps:5d}  {ms:7.3f}  {ms * 100:9.1f}")
    out.table("samba_relay", ["K", "steps", "ms_per_step", "est_1e5_s"], rows,
              f"A bare pyzmq relay of SAMBA's messages ({out.machine})")
