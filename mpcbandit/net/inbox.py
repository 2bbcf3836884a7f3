"""What a channel has read off its link and not yet handed over: the receive pump and its
checks (session, sender, replays, the caps on unread messages per peer), the messages filed
under (sender, tag) until a round takes them, and when an emulated network hands each over.

The channel's own messages (control.py) are not filed: the pump hands them to the channel's
``PeerControl`` as they arrive, and tells a sender at most once a second how far it has read.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Mapping

from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.net.codec import Envelope, decode, frames_nbytes
from mpcbandit.net.control import ACK, is_control
from mpcbandit.net.link import Link
from mpcbandit.net.netspec import NetSpec

__all__ = ["Inbox", "MAX_BUFFERED"]

#: messages a peer may have waiting in our buffer before it is treated as flooding
MAX_BUFFERED = 100_000
#: a reader tells a sender how far it has read at most this often (and 4 times a deadline)
_ACK_EVERY_S = 1.0


class Inbox:
    """Messages read off a link, filed under (sender, tag) until a round takes them."""

    def __init__(self, me: str, peers: frozenset[str], link: Link, session_in: Mapping[str, str],
                 *, deadline_s: float, max_bytes: int, max_buffered_bytes: int,
                 net: NetSpec | None):
        """session_in: per peer, the session its messages must carry."""
        self.me, self.peers, self.link, self._session_in = me, peers, link, session_in
        self.max_bytes, self.max_buffered_bytes = max_bytes, max_buffered_bytes
        self._one_way = net.one_way_s if net else 0.0
        self._bw = net.bytes_per_s if net else None
        self._emulated = bool(net and net.emulated)
        self._link_free: dict[str, float] = defaultdict(float)
        #: (sender, tag) -> (when it may be handed over, body, bytes, the sender's hops)
        self.buffer: dict[tuple[str, str], tuple[float, Any, int, int]] = {}
        self.count_in: dict[tuple[str, str], int] = defaultdict(int)  # taken per (sender, label)
        self.seq_in: dict[str, int] = defaultdict(lambda: -1)  # highest sequence accepted
        self.accepted: dict[str, int] = defaultdict(int)  # messages accepted per sender
        #: the longest chain of messages (each sent after the one before it was received)
        #: that ends here now: the one-way delays this party has waited in sequence
        self.hops = 0
        self._buffered: dict[str, int] = defaultdict(int)
        self._buffered_bytes: dict[str, int] = defaultdict(int)
        #: the most unread bytes any one peer had waiting here
        self.peak_buffered_bytes = 0
        self.duplicates_dropped = 0
        self._dropped_from: dict[str, int] = defaultdict(int)
        self._acked_at: dict[str, float] = defaultdict(float)  # when we last told a sender
        self._ack_every_s = min(_ACK_EVERY_S, deadline_s / 4)
        self._on_control: Callable[[str, str, Envelope], None] | None = None
        self._send_control: Callable[..., bool] | None = None
        self._bye_sent: Mapping[str, int] = {}

    def heed(self, control: Any) -> None:
        """Hand control messages to control (a PeerControl), and acknowledge reads through it."""
        # bound once here: the pump runs per message, and a PeerControl needs this inbox first
        self._on_control, self._send_control = control.receive, control.send
        self._bye_sent = control.bye_sent  # a peer we said bye to needs no more acks

    def due(self, label: str, peer: str) -> float:
        """When peer's next label message may be read (inf: not here yet)."""
        got = self.buffer.get((peer, f"{label}#{self.count_in[(peer, label)]}"))
        return float("inf") if got is None else got[0]

    def take(self, label: str, key: tuple[str, str]) -> tuple[Any, int]:
        """Hand over the message filed under key (sender, tag): (body, bytes), once due."""
        deliver_at, body, nbytes, hops = self.buffer.pop(key)
        self.hops = max(self.hops, hops + 1)
        peer = key[0]
        self.count_in[(peer, label)] += 1
        self._buffered[peer] -= 1
        self._buffered_bytes[peer] -= nbytes
        if deliver_at:  # an emulated network: hand it over when it would have arrived
            delay = deliver_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        return body, nbytes

    def overdue(self, peer: str, tag: str, deadline_s: float) -> PeerTimeout:
        """The error for peer's message tag not here within deadline_s (naming replays dropped)."""
        err = PeerTimeout(peer, tag, deadline_s)
        dropped = self._dropped_from[peer]
        if dropped:
            err.args = (f"{err}; {dropped} message(s) from '{peer}' were dropped as replays "
                        "(sequence numbers at or below one already seen: the peer jumped its "
                        "sequence or resent)",)
        return err

    def drain(self) -> None:
        """Read, without waiting, everything the link holds now."""
        while self.pump(0):
            pass

    def pump(self, timeout_s: float) -> bool:
        """Wait up to timeout_s for one message and file it under (sender, tag); whether one came."""
        got = self.link.poll(timeout_s)
        if got is None:
            return False
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
        if is_control(tag):
            self._on_control(sender, tag, env)
            return True
        if env.seq <= self.seq_in[sender]:
            self.duplicates_dropped += 1  # replayed or duplicated: already delivered
            self._dropped_from[sender] += 1
            return True
        self.seq_in[sender] = env.seq
        self.accepted[sender] += 1
        if (sender, tag) in self.buffer:
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
        deliver_at = self._deliver_at(sender, arrived, env.sent, nbytes) if self._emulated else 0.0
        self.buffer[(sender, tag)] = (deliver_at, env.body, nbytes, env.hops)
        self._buffered[sender] += 1
        self._buffered_bytes[sender] = waiting
        if waiting > self.peak_buffered_bytes:
            self.peak_buffered_bytes = waiting
        now = time.monotonic()
        if now - self._acked_at[sender] >= self._ack_every_s and sender not in self._bye_sent:
            self._acked_at[sender] = now  # a sender at its close sees us read on
            self._send_control(sender, ACK, {"read": env.seq}, wait=False)
        return True

    def _deliver_at(self, sender: str, arrived: float, sent: float | None, nbytes: int) -> float:
        """When an emulated network would hand this message over: serialisation then delay,
        from when it was sent. A message read late (it waited while this party computed) was
        on its way meanwhile; parties on one host share the monotonic clock, and another
        host's, ahead or behind, moves a delivery by at most a delay."""
        if sent is not None:
            arrived = max(arrived - self._one_way, min(arrived, sent))
        start = max(arrived, self._link_free[sender])
        done = start + (nbytes / self._bw if self._bw else 0.0)
        self._link_free[sender] = done
        return done + self._one_way
