"""A party's view of the network: ``exchange`` rounds over a link, with tags, deadlines,
buffering, latency emulation and accounting.

A *link* moves frames between named parties (ZeroMQ or in-process queues); the channel knows
nothing of shares or protocols. Tags are ``label#n`` where n counts the messages with that
label on that directed link, so every party derives the same tag without coordination.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Iterable, Mapping, Protocol

from mpcbandit.errors import PeerGone, PeerTimeout, ProtocolError
from mpcbandit.net.codec import Encoder, Envelope, decode, frames_nbytes
from mpcbandit.net.netspec import NetSpec
from mpcbandit.net.stats import RoundStats

__all__ = ["Link", "Channel", "MAX_BUFFERED", "BUFFERED_MESSAGES_DEFAULT"]

#: messages a peer may have waiting in our buffer before it is treated as flooding
MAX_BUFFERED = 100_000
#: without a cap on unread bytes per peer, this many of the largest message
BUFFERED_MESSAGES_DEFAULT = 4
#: during a long wait, how often the awaited peer's connection is checked
_WATCH_S = 0.5


class Link(Protocol):
    """Moves frames between parties; ``poll`` names the authenticated sender.

    A link may also offer ``down_for(peer) -> float | None`` (seconds its connection to peer
    has been down); the channel then names a dead peer during long waits.
    """

    def send(self, peer: str, frames: list) -> None: ...

    def poll(self, timeout_s: float) -> tuple[str, list] | None: ...

    def close(self) -> None: ...


class Channel:
    """Rounds of messages between one party and its peers."""

    def __init__(self, me: str, peers: Iterable[str], link: Link, *, session: str,
                 deadline_s: float, max_bytes: int, net: NetSpec | None = None,
                 link_sessions: Mapping[str, tuple[str, str]] | None = None,
                 max_buffered_bytes: int | None = None):
        """link_sessions: per peer, the (outgoing, incoming) session ids agreed in the hello;
        without it every link uses session. max_buffered_bytes: unread bytes one peer may have
        waiting here (default: BUFFERED_MESSAGES_DEFAULT x max_bytes)."""
        self.me = me
        self.peers = frozenset(peers)
        self.link = link
        self.session = session
        self._session_out = {p: (link_sessions or {}).get(p, (session, session))[0] for p in self.peers}
        self._session_in = {p: (link_sessions or {}).get(p, (session, session))[1] for p in self.peers}
        self.deadline_s = deadline_s
        self.max_bytes = max_bytes
        self.max_buffered_bytes = max_buffered_bytes or BUFFERED_MESSAGES_DEFAULT * max_bytes
        self.stats = RoundStats()
        self._encoder = Encoder()
        self._one_way = net.one_way_s if net else 0.0
        self._bw = net.bytes_per_s if net else None
        self._emulated = bool(net and net.emulated)
        self._link_free: dict[str, float] = defaultdict(float)
        self._seq_out: dict[str, int] = defaultdict(int)
        self._seq_in: dict[str, int] = defaultdict(lambda: -1)
        self._count_out: dict[tuple[str, str], int] = defaultdict(int)
        self._count_in: dict[tuple[str, str], int] = defaultdict(int)
        self._buffer: dict[tuple[str, str], tuple[float, Any, int]] = {}
        self._buffered: dict[str, int] = defaultdict(int)
        self._buffered_bytes: dict[str, int] = defaultdict(int)
        #: the most unread bytes any one peer had waiting here
        self.peak_buffered_bytes = 0
        self._idle_since = time.perf_counter()
        self.duplicates_dropped = 0
        self._dropped_from: dict[str, int] = defaultdict(int)

    # ------------------------------------------------------------ public API

    def exchange(self, label: str, send: Mapping[str, Any] | None = None,
                 recv: Iterable[str] = (), *, deadline_s: float | None = None) -> dict[str, Any]:
        """One round: send each peer its message, then receive one message from each in recv.

        deadline_s overrides the channel's deadline for this round's receives (a wait that is
        legitimately long, such as a set-up step or a result at the end of a run).
        """
        st = self.stats.op(label)
        if send:
            for peer, body in send.items():
                st.bytes_sent += self._send(label, peer, body)
                st.messages += 1
        t1 = time.perf_counter()
        out = {}
        for peer in recv:
            out[peer], nbytes = self._receive(label, peer, deadline_s or self.deadline_s)
            st.bytes_received += nbytes
        t2 = time.perf_counter()
        st.rounds += 1
        st.compute_s += t1 - self._idle_since
        st.wait_s += t2 - t1
        self._idle_since = t2
        return out

    def send(self, label: str, peer: str, body: Any) -> None:
        """A round that only sends body to peer."""
        self.exchange(label, send={peer: body})

    def recv(self, label: str, peer: str, *, deadline_s: float | None = None) -> Any:
        """A round that only receives from peer."""
        return self.exchange(label, recv=(peer,), deadline_s=deadline_s)[peer]

    def receive_any(self, label: str, senders: Iterable[str]) -> tuple[str, Any]:
        """One round: the next label message from whichever of senders delivers first."""
        senders = list(senders)
        t1 = time.perf_counter()
        st = self.stats.op(label)
        deadline = t1 + self.deadline_s
        while True:
            for peer in senders:
                key = (peer, f"{label}#{self._count_in[(peer, label)]}")
                if key in self._buffer:
                    body, nbytes = self._take(label, key)
                    t2 = time.perf_counter()
                    st.rounds += 1
                    st.bytes_received += nbytes
                    st.compute_s += t1 - self._idle_since
                    st.wait_s += t2 - t1
                    self._idle_since = t2
                    return peer, body
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise PeerTimeout(" or ".join(senders), f"{label}#*", self.deadline_s)
            self._pump(remaining)

    def start_clock(self) -> None:
        """Count compute time from now (set-up before the protocol is not the protocol's)."""
        self._idle_since = time.perf_counter()

    def close(self) -> None:
        """Flush what is queued (bounded) and release the link."""
        self.link.close()

    # ------------------------------------------------------------ internals

    def _send(self, label: str, peer: str, body: Any) -> int:
        if peer not in self.peers:
            raise ValueError(f"{self.me} has no channel to '{peer}' (peers: {sorted(self.peers)})")
        n = self._count_out[(peer, label)]
        self._count_out[(peer, label)] = n + 1
        tag = f"{label}#{n}"
        seq = self._seq_out[peer]
        self._seq_out[peer] = seq + 1
        frames = self._encoder.encode(Envelope(self._session_out[peer], seq, self.me, tag, body))
        try:
            self.link.send(peer, frames)
        except PeerTimeout as e:  # the link knows no tags
            raise PeerTimeout(peer, tag, e.deadline_s) from None
        return frames_nbytes(frames)

    def _receive(self, label: str, peer: str, deadline_s: float) -> tuple[Any, int]:
        key = (peer, f"{label}#{self._count_in[(peer, label)]}")
        if key in self._buffer:
            return self._take(label, key)
        tag = key[1]
        deadline = time.perf_counter() + deadline_s
        # a wait longer than the channel's deadline watches the peer's connection meanwhile,
        # so a dead peer is named within the deadline, not after the whole wait
        watch = getattr(self.link, "down_for", None) if deadline_s > self.deadline_s else None
        while key not in self._buffer:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                raise self._timeout(peer, tag, deadline_s)
            if watch is not None:
                down = watch(peer)
                if down is not None and down > self.deadline_s:
                    raise PeerGone(peer, tag, down)
                remaining = min(remaining, _WATCH_S)
            self._pump(remaining)
        return self._take(label, key)

    def _timeout(self, peer: str, tag: str, deadline_s: float) -> PeerTimeout:
        err = PeerTimeout(peer, tag, deadline_s)
        dropped = self._dropped_from[peer]
        if dropped:
            err.args = (f"{err}; {dropped} message(s) from '{peer}' were dropped as replays "
                        "(sequence numbers at or below one already seen: the peer jumped its "
                        "sequence or resent)",)
        return err

    def _take(self, label: str, key: tuple[str, str]) -> tuple[Any, int]:
        deliver_at, body, nbytes = self._buffer.pop(key)
        peer = key[0]
        self._count_in[(peer, label)] += 1
        self._buffered[peer] -= 1
        self._buffered_bytes[peer] -= nbytes
        if deliver_at:  # an emulated network: hand it over when it would have arrived
            delay = deliver_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        return body, nbytes

    def _pump(self, timeout_s: float) -> None:
        """Wait up to timeout_s for one message and file it under (sender, tag)."""
        got = self.link.poll(timeout_s)
        if got is None:
            return
        arrived = time.perf_counter() if self._emulated else 0.0
        sender, frames = got
        if sender not in self.peers:
            raise ProtocolError(sender, "?", f"unknown sender (peers of {self.me}: {sorted(self.peers)})")
        env = decode(frames, sender, "?", self.max_bytes)
        tag = env.tag  # one frame per small message: the tag travels inside the envelope
        if env.session != self._session_in[sender]:
            raise ProtocolError(sender, tag, f"message of session {env.session!r}, expected "
                                             f"{self._session_in[sender]!r}: from another or an "
                                             "earlier run (replayed), or the peer's --session differs")
        if env.sender != sender:
            raise ProtocolError(sender, tag, f"envelope claims sender {env.sender!r}")
        if env.seq <= self._seq_in[sender]:
            self.duplicates_dropped += 1  # replayed or duplicated: already delivered
            self._dropped_from[sender] += 1
            return
        self._seq_in[sender] = env.seq
        if (sender, tag) in self._buffer:
            raise ProtocolError(sender, tag, "second message with the same tag")
        if self._buffered[sender] >= MAX_BUFFERED:
            raise ProtocolError(sender, tag, f"more than {MAX_BUFFERED} unread messages")
        nbytes = frames_nbytes(frames)
        waiting = self._buffered_bytes[sender] + nbytes
        if waiting > self.max_buffered_bytes:
            raise ProtocolError(sender, tag, f"{waiting} unread bytes waiting from this peer, "
                                             f"above the cap of {self.max_buffered_bytes} "
                                             "(run.max_buffered_mb): a peer running far ahead "
                                             "or flooding")
        deliver_at = self._deliver_at(sender, arrived, nbytes) if self._emulated else 0.0
        self._buffer[(sender, tag)] = (deliver_at, env.body, nbytes)
        self._buffered[sender] += 1
        self._buffered_bytes[sender] = waiting
        if waiting > self.peak_buffered_bytes:
            self.peak_buffered_bytes = waiting

    def _deliver_at(self, sender: str, arrived: float, nbytes: int) -> float:
        """When an emulated network would hand this message over: serialisation then delay."""
        start = max(arrived, self._link_free[sender])
        done = start + (nbytes / self._bw if self._bw else 0.0)
        self._link_free[sender] = done
        return done + self._one_way
