"""ZeroMQ link: one ROUTER bound per party for everything it receives, one DEALER per peer
(connected to that peer's ROUTER, routing id = our party name) for everything it sends.

Sending through a DEALER queues messages until the peer is up, so nothing is dropped by a
ROUTER that has not heard from its peer yet; the ROUTER still sets ROUTER_MANDATORY so a
reply through it could never vanish silently. At start every party says hello to each peer
and waits (bounded) for each peer's hello (hello.py). On the wire a message is its frames alone
(the envelope, then any large buffers): a small message is one frame, the tag inside the
envelope; a hello is an empty frame and the greeting. Each DEALER's connection is watched
(connections.py): a peer whose connection stays down can be named.

With CURVE (``curve`` given) the authenticator runs before anything binds, is checked to
refuse an unknown key, and the sender of every message is the party whose key it proved
(ZAP User-Id), never the routing id it declared.
"""

from __future__ import annotations

import errno
import math
import resource
import time

import numpy as np
import zmq

from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.net.connections import ConnectionWatch, stop_monitor
from mpcbandit.net.hello import DEFAULT_GREETING, HELLO_TAG, Hello
from mpcbandit.net.security import CurveSetup, PartyAuthenticator, check_refuses_unknown_keys

__all__ = ["ZmqLink", "HELLO_TAG", "ZERO_COPY_BYTES", "leaves_uncopied", "raise_file_limit",
           "stop_monitor"]

#: messages queued per peer and direction before a sender waits for its reader: parties that
#: only send (input holders, passive participants) would otherwise run unboundedly ahead
QUEUE_MESSAGES = 1000
#: frames from this size on are sent without copying. Below it a copy is cheaper than pyzmq's
#: zero-copy hand-off (its release runs through a helper thread, a wake-up per frame): measured
#: by process CPU per round, copying wins at 64 and 100 KiB, loses at 256 KiB, where each copy
#: is a fresh mmap (glibc's threshold, 128 KiB by default) and page faults
ZERO_COPY_BYTES = 128 * 1024


def leaves_uncopied(frame) -> bool:
    """Whether frame is sent without a copy (ZERO_COPY_BYTES or more); if so, the array it views
    becomes read-only, so a write after sending raises instead of changing bytes still queued."""
    if len(frame) < ZERO_COPY_BYTES:
        return False
    owner = getattr(frame, "obj", None)  # a memoryview's array; bytes have none
    if isinstance(owner, np.ndarray):
        owner.flags.writeable = False
    return True


_HEARTBEAT_MS = 1000
_HANDSHAKE_MS = 5000
_TIMEOUT_STEP_MS = 250
# plain ints: combining pyzmq's enum flags runs Python code on every message
_SNDMORE, _NOBLOCK = int(zmq.SNDMORE), int(zmq.NOBLOCK)


def _wait_ms(timeout_s: float) -> int:
    """timeout_s as zmq's timeout: whole milliseconds rounded up (a C int). Rounded down, a
    wait would end up to a millisecond before its caller's deadline, and the caller, looping
    until that deadline, would spin through the rest with zero-millisecond waits (most of an
    idle serving party's CPU: ~40 receives per 20 ms poll)."""
    return min(max(0, math.ceil(timeout_s * 1000)), 2**31 - 1)


def raise_file_limit() -> int:
    """Raise this process's soft limit on open files to the hard limit; the new limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass  # some systems refuse the hard value: keep what we have
    return soft


def _router_options(router: zmq.Socket, max_bytes: int) -> None:
    """Set the ROUTER's options: replies never dropped silently, a bounded handshake, its
    queue, and the largest message it takes."""
    router.setsockopt(zmq.ROUTER_MANDATORY, 1)
    # a connection that has not finished its handshake by then is dropped: plain TCP
    # connections (no key needed) cannot pile up and fill the file table
    router.setsockopt(zmq.HANDSHAKE_IVL, _HANDSHAKE_MS)
    router.setsockopt(zmq.RCVHWM, QUEUE_MESSAGES)
    # zmq drops an oversize message and the connection; leave headroom so frames just
    # above our cap reach the codec and get a named ProtocolError instead
    router.setsockopt(zmq.MAXMSGSIZE, max_bytes + 1024 * 1024)


def _dealer_options(dealer: zmq.Socket, me: str, send_timeout_s: float) -> None:
    """Set a DEALER's options: our name as its routing id, its queue, its heartbeats."""
    dealer.setsockopt(zmq.ROUTING_ID, me.encode())
    dealer.setsockopt(zmq.SNDHWM, QUEUE_MESSAGES)
    # ZMTP pings find a peer whose host vanished without closing the connection; only well
    # after a send to it would have timed out: a dropped connection loses what was queued,
    # and a frozen peer must be named by that timeout
    dealer.setsockopt(zmq.HEARTBEAT_IVL, _HEARTBEAT_MS)
    dealer.setsockopt(zmq.HEARTBEAT_TIMEOUT, min(max(3 * _HEARTBEAT_MS,
                                                     int(2 * send_timeout_s * 1000)), 2**31 - 1))


class ZmqLink:
    """Frames between this party and its peers over ZeroMQ TCP."""

    def __init__(self, me: str, bind_addr: str, peers: dict[str, str], *, max_bytes: int,
                 linger_s: float = 2.0, curve: CurveSetup | None = None, send_timeout_s: float = 30.0):
        self.me = me
        self.send_timeout_s = send_timeout_s
        self.peers = dict(peers)
        self.curve = curve
        self._linger_ms = int(linger_s * 1000)
        self._ctx = zmq.Context()
        self._rcvtimeo = -1
        self.auth: PartyAuthenticator | None = None
        self._connections = ConnectionWatch()
        try:
            if curve is not None:
                self.auth = PartyAuthenticator(self._ctx, curve.roster, set(self.peers)).start_for()
            self.router = self._socket(zmq.ROUTER)
            _router_options(self.router, max_bytes)
            if curve is not None:
                self.router.curve_server = True
            try:
                self.router.bind(bind_addr)
            except zmq.ZMQError as e:
                raise OSError(f"{me} cannot bind {bind_addr}: {e}") from None
            if curve is not None:
                check_refuses_unknown_keys(self._ctx, bind_addr, curve.keypair.public)
                self.auth.refused.clear()
            self.dealers: dict[str, zmq.Socket] = {}
            for peer, addr in self.peers.items():
                d = self._socket(zmq.DEALER)
                _dealer_options(d, me, send_timeout_s)
                self._connections.watch(peer, d)
                if curve is not None:
                    d.curve_serverkey = curve.roster.keys[peer]
                d.connect(addr)
                self.dealers[peer] = d
        except zmq.ZMQError as e:
            self._teardown(linger_ms=0)
            if e.errno == errno.EMFILE:
                raise OSError(errno.EMFILE, f"{me} is out of file descriptors (limit "
                              f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]}): raise "
                              "`ulimit -n`") from None
            raise
        except BaseException:
            self._teardown(linger_ms=0)
            raise
        self._hello = Hello(self.peers, self.dealers, self._recv, self.auth)
        self._pending = self._hello.pending  # what arrived during the hello: handed over first

    def _socket(self, kind: int) -> zmq.Socket:
        sock = self._ctx.socket(kind)
        sock.setsockopt(zmq.LINGER, 0)
        if self.curve is not None:
            sock.curve_publickey = self.curve.keypair.public
            sock.curve_secretkey = self.curve.keypair.secret
        return sock

    def hello(self, timeout_s: float, greeting: bytes = DEFAULT_GREETING,
              max_pending_bytes: int | None = None) -> dict[str, bytes]:
        """Greet every peer with greeting, wait until every peer has greeted us; their greetings.

        Messages that arrive meanwhile are kept for later, at most max_pending_bytes per peer
        (the channel's cap on unread bytes); past it the sender is refused by name. A hello
        that timed out may be tried again: the greetings received so far are kept (a peer that
        has finished its own hello greets only once)."""
        return self._hello.greet(timeout_s, greeting, max_pending_bytes)

    def not_greeted(self) -> list[str]:
        """The peers whose hello has not arrived yet (sorted)."""
        return self._hello.not_greeted()

    def send(self, peer: str, frames: list) -> None:
        """Queue frames (one message) for peer; waits at most send_timeout_s while its queue is full."""
        end = time.monotonic() + self.send_timeout_s
        while not self.try_send(peer, frames):  # queue full: the reader is far behind
            remaining = end - time.monotonic()
            if remaining <= 0 or not self.wait_room(peer, remaining):
                raise PeerTimeout(peer, "?", self.send_timeout_s) from None

    def try_send(self, peer: str, frames: list) -> bool:
        """Queue frames (one message) for peer if its queue has room now; never waits (False:
        nothing was queued)."""
        sock = self.dealers.get(peer)
        if sock is None:
            return False
        last = len(frames) - 1
        # zero-copy pays off only for large buffers; small ones are cheaper copied. The first
        # frame is the envelope, bytes, which no one can write to: only array frames follow
        first = frames[0]
        try:
            sock.send(first, (_SNDMORE if last else 0) | _NOBLOCK, copy=len(first) < ZERO_COPY_BYTES)
        except zmq.Again:
            return False
        for i in range(1, last + 1):  # once the first part is queued, the rest always is
            f = frames[i]
            sock.send(f, _SNDMORE if i < last else 0, copy=not leaves_uncopied(f))
        return True

    def wait_room(self, peer: str, timeout_s: float) -> bool:
        """Wait up to timeout_s until peer's queue has room; whether it has."""
        sock = self.dealers.get(peer)
        return sock is None or bool(sock.poll(_wait_ms(timeout_s), zmq.POLLOUT))

    def forget(self, peer: str) -> None:
        """Stop talking to a peer that has finished: what is queued for it may leave (bounded by
        the link's linger), and it is never connected to again (no reconnection, and no name
        lookup for a host that has gone)."""
        sock = self.dealers.pop(peer, None)
        if sock is None:
            return
        self._connections.stop(peer, sock)
        sock.close(linger=self._linger_ms)

    def poll(self, timeout_s: float) -> tuple[str, list] | None:
        """The next (sender, frames) within timeout_s, or None."""
        while True:
            if self._pending:
                return self._pending.popleft()
            got = self._recv(timeout_s)
            if got is None:
                return None
            if got[1][0] != HELLO_TAG:  # a late or repeated hello carries nothing
                return got
            timeout_s = 0

    def _recv(self, timeout_s: float) -> tuple[str, list] | None:
        # a blocking recv with a timeout wakes faster than poll() followed by recv()
        # zmq takes a C int; longer waits are loops of this one (callers re-check deadlines)
        ms = _wait_ms(timeout_s)
        if ms > _TIMEOUT_STEP_MS:
            # callers pass the time left, a new value on every call: in steps, the socket
            # option changes only every step (the caller loops on until its own deadline)
            ms -= ms % _TIMEOUT_STEP_MS
        if ms != self._rcvtimeo:
            self.router.setsockopt(zmq.RCVTIMEO, ms)
            self._rcvtimeo = ms
        router = self.router
        try:
            routing_id = router.recv()
        except zmq.Again:
            return None
        # a ROUTER delivers the routing id and at least one frame, all at once; Frame.more
        # spares a getsockopt(RCVMORE) per frame, which costs more than the receive itself
        frame = router.recv(copy=False)
        sender = routing_id.decode("utf-8", "replace")
        if self.curve is not None:
            declared, sender = sender, frame.get("User-Id")
            if sender != declared:
                if frame.more:
                    self._drain()
                raise ProtocolError(sender or "?", "?", f"declares routing id '{declared}' but "
                                    f"its CURVE key belongs to '{sender or 'no party'}'")
        parts = [frame.bytes]  # the envelope (or a hello's empty marker): small, copied
        while frame.more:
            frame = router.recv(copy=False)
            parts.append(frame.buffer)  # buffers: zero-copy, writable
        return sender, parts

    def down_for(self, peer: str) -> float | None:
        """Seconds the connection to peer has been down after it was up, else None."""
        return self._connections.down_for(peer)

    def _drain(self) -> None:
        while self.router.getsockopt(zmq.RCVMORE):
            self.router.recv()

    def close(self, linger_s: float | None = None) -> None:
        """Give queued messages a bounded time to leave (linger_s, else the link's), then
        release every socket."""
        self._teardown(self._linger_ms if linger_s is None else int(linger_s * 1000))

    def _teardown(self, linger_ms: int) -> None:
        for peer, d in getattr(self, "dealers", {}).items():
            self._connections.stop(peer, d)
            d.close(linger=linger_ms)
        if hasattr(self, "router"):
            self.router.close(linger=0)
        if self.auth is not None:
            self.auth.stop()
        self._ctx.term()
