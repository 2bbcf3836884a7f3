"""The bare pyzmq relay SAMBA's timing goal is set against: `mpcbandit bench samba-relay`.

The same message pattern as one SAMBA step (K data-owner processes -> Controller -> Comp ->
Controller -> data owners; 36-byte scores, one batched list each way, 29-byte bits), with no
cryptography, no bandit arithmetic and no channel layer: one ROUTER at the Controller, a DEALER
per other process, one connection per pair carrying both directions (the floor). The same relay
with our link's topology (every process binds a ROUTER to receive and sends through a DEALER per
peer: two connections per pair, one per direction) measures what that layout costs.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import socket
import time

import click

from mpcbandit.experiments.common import Output, experiment_command, int_list

__all__ = ["relay_ms_per_step", "bench"]

SCORE, BIT, HELLO = b"s" * 36, b"b" * 29, b"h"
DEADLINE_S = 60.0  # a relay that waits longer than this for any message has lost one


def _dealer(addr: str, ident: bytes, ctx=None):
    """A DEALER whose every send and receive gives up after DEADLINE_S; (its context, it)."""
    import zmq

    ctx = ctx or zmq.Context()
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.ROUTING_ID, ident)
    s.setsockopt(zmq.RCVTIMEO, int(DEADLINE_S * 1000))
    s.setsockopt(zmq.SNDTIMEO, int(DEADLINE_S * 1000))
    s.connect(addr)
    return ctx, s


def _owner(addr: str, i: int, steps: int) -> None:
    ctx, s = _dealer(addr, f"do.{i}".encode())
    for _ in range(steps + 1):  # one warm-up step
        s.send(SCORE)
        s.recv()
    ctx.destroy(linger=1000)


def _comp(addr: str, arms: int, steps: int) -> None:
    ctx, s = _dealer(addr, b"comp")
    s.send(HELLO)  # a ROUTER drops what it sends to a peer it has not heard from
    for _ in range(steps + 1):
        s.recv()
        s.send(BIT * arms)
    ctx.destroy(linger=1000)


def _recv(router, waiting_for: str, step: int | None = None) -> list[bytes]:
    """The next message at the ROUTER (its RCVTIMEO is the deadline), or an error naming what
    did not come."""
    import zmq

    try:
        return router.recv_multipart()
    except zmq.Again:
        at = "" if step is None else f" at step {step}"
        raise RuntimeError(f"samba relay: no message for {DEADLINE_S:.0f} s while waiting for "
                           f"{waiting_for}{at}") from None


def _router(ctx, addr: str):
    """The Controller's ROUTER: a send to an unknown peer raises, every wait has DEADLINE_S."""
    import zmq

    router = ctx.socket(zmq.ROUTER)
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    router.setsockopt(zmq.RCVTIMEO, int(DEADLINE_S * 1000))
    router.setsockopt(zmq.SNDTIMEO, int(DEADLINE_S * 1000))
    router.bind(addr)
    return router


def _two_connection_party(ctl_addr: str, ident: bytes, steps: int, found) -> None:
    """A data owner (sends its score, then waits for its bit) or Comp (waits for the scores,
    then sends the bits) of the two-connection relay: it receives on a ROUTER of its own, whose
    address it puts in found, and sends through a DEALER to the Controller."""
    import zmq

    ctx, dealer = _dealer(ctl_addr, ident)
    router = _router(ctx, "tcp://127.0.0.1:*")
    found.put((ident, router.getsockopt_string(zmq.LAST_ENDPOINT)))
    owner = ident != b"comp"
    for step in range(steps + 1):
        if owner:
            dealer.send(SCORE)
        body = _recv(router, "the Controller's message", step)[-1]
        if not owner:
            dealer.send(BIT * (len(body) // len(SCORE)))
    ctx.destroy(linger=1000)


def relay_ms_per_step(arms: int, steps: int, connections_per_pair: int = 1) -> float:
    """Milliseconds per relayed step with `arms` data-owner processes (the first step untimed);
    connections_per_pair = 2: over our link's topology, one connection per direction."""
    import zmq

    with socket.socket() as probe:  # a free port; children start before any zmq context exists
        probe.bind(("127.0.0.1", 0))
        addr = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    # forkserver: forking the caller (a CLI, a test session) copies whatever threads it holds
    ctx_mp = mp.get_context("forkserver")
    ctx_mp.set_forkserver_preload([__name__])  # children start without importing anything
    if connections_per_pair == 2:
        found = ctx_mp.Queue()  # each child's own address
        idents = [f"do.{i}".encode() for i in range(arms)] + [b"comp"]
        procs = [ctx_mp.Process(target=_two_connection_party, args=(addr, ident, steps, found),
                                daemon=True) for ident in idents]

        def relay(ctx, router) -> float:
            return _relay_two_connections(ctx, router, found, idents, steps)
    else:
        procs = [ctx_mp.Process(target=_owner, args=(addr, i, steps), daemon=True)
                 for i in range(arms)]
        procs.append(ctx_mp.Process(target=_comp, args=(addr, arms, steps), daemon=True))

        def relay(ctx, router) -> float:
            return _relay_one_connection(router, arms, steps)
    for p in procs:
        p.start()
    ctx = zmq.Context()
    try:
        elapsed = relay(ctx, _router(ctx, addr))
    finally:
        ctx.destroy(linger=0)
        for p in procs:
            p.join(DEADLINE_S)
            if p.is_alive():
                p.terminate()
    return 1e3 * elapsed / steps


def _relay_one_connection(router, arms: int, steps: int) -> float:
    """The Controller's steps through its ROUTER alone; seconds for steps 1 .. steps."""
    comp_id = b"comp"
    early: list[bytes] = []  # owners' first scores that arrive before comp's hello
    while True:
        ident, body = _recv(router, "comp's hello")
        if ident == comp_id and body == HELLO:
            break
        early.append(ident)
    t0 = 0.0
    for step in range(steps + 1):
        if step == 1:
            t0 = time.perf_counter()
        got, early = early, []
        while len(got) < arms:
            got.append(_recv(router, "the data owners' scores", step)[0])
        router.send_multipart([comp_id, b"".join([SCORE] * arms)])
        while _recv(router, "comp's bits", step)[0] != comp_id:
            pass
        for ident in got:
            router.send_multipart([ident, BIT])
    return time.perf_counter() - t0


def _relay_two_connections(ctx, router, found, idents: list[bytes], steps: int) -> float:
    """The Controller's steps receiving on its ROUTER and sending through a DEALER per party;
    seconds for steps 1 .. steps."""
    dealers = {}
    while len(dealers) < len(idents):
        try:
            ident, addr = found.get(timeout=DEADLINE_S)
        except queue.Empty:
            missing = b", ".join(sorted(set(idents) - set(dealers))).decode()
            raise RuntimeError(f"samba relay: no address for {DEADLINE_S:.0f} s from {missing} "
                               "(their ROUTERs did not bind)") from None
        dealers[ident] = _dealer(addr, b"controller", ctx)[1]
    owners, comp = [dealers[i] for i in idents[:-1]], dealers[b"comp"]
    t0 = 0.0
    for step in range(steps + 1):
        if step == 1:
            t0 = time.perf_counter()
        for _ in owners:
            _recv(router, "the data owners' scores", step)
        comp.send(SCORE * len(owners))
        _recv(router, "comp's bits", step)
        for d in owners:
            d.send(BIT)
    return time.perf_counter() - t0


@experiment_command("samba-relay", "the same as the defaults (the relay has no paper size)",
                    short_help="A bare pyzmq relay's time per step: SAMBA's floor")
@click.option("--arms", type=int_list, default="10,100", help="The values of K.")
@click.option("--steps", type=click.IntRange(min=1), default=2000, help="Relayed steps timed.")
def bench(out: Output, paper: bool, arms: list[int], steps: int) -> None:
    """Milliseconds per step of a bare pyzmq relay with SAMBA's message pattern and process
    count (K data owners, Controller, Comp), and the 10^5-step time it implies: the floor
    `mpcbandit figure samba-8` prints beside every secure point. Beside it, the same relay over
    our link's topology (a ROUTER to receive and a DEALER per peer: two connections per pair),
    run in turn with it. Writes samba_relay (.csv, .md).
    """
    rows = []
    click.echo(" K  steps  ms/step  est_1e5_s  two_connections_ms/step  ratio")
    for k in arms:
        ms = relay_ms_per_step(k, steps)
        two = relay_ms_per_step(k, steps, connections_per_pair=2)
        rows.append([k, steps, round(ms, 4), round(ms * 100, 1), round(two, 4), round(two / ms, 3)])
        click.echo(f"{k:3d}  {steps:5d}  {ms:7.3f}  {ms * 100:9.1f}  {two:23.3f}  {two / ms:5.2f}")
    out.table("samba_relay", ["K", "steps", "ms_per_step", "est_1e5_s",
                              "two_connections_ms_per_step", "two_over_one"], rows,
              f"A bare pyzmq relay of SAMBA's messages, one connection per pair (the floor) and "
              f"two, one per direction as our link has them ({out.machine})")
