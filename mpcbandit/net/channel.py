"""A party's view of the network: ``exchange`` rounds over a link, with tags, deadlines,
buffering, latency emulation and accounting, and the end of a party's part: the closing
handshake (``finish``) and the news of a failure (``abort``).

A *link* moves frames between named parties (ZeroMQ or in-process queues); the channel knows
nothing of shares or protocols. Tags are ``label#n`` where n counts the messages with that
label on that directed link, so every party derives the same tag without coordination.

The channel runs the rounds, their waits and their clock; it holds the parts that do the rest:
what it sends goes through its ``Outbox`` (outbox.py: tags, sequence numbers, the wait for
room in a slow reader's queue), what it reads is filed by its ``Inbox`` (inbox.py: the
receive pump, the caps on unread bytes per peer, emulated delivery), and what it knows of its
peers beyond their protocol messages is its ``PeerControl``'s (peer_control.py: the control
messages, the watch on connections).

Besides the protocol's messages each link carries the channel's own (``control.py``): a party
ends with ``finish``, a bye to every peer still running and a wait until each has read all it
was sent; a party that fails calls ``abort``, and its peers' waits end at once naming it. Every
wait watches every running peer's connection: one down for ``GONE_S`` is gone.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Iterable, Mapping

from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.net.codec import Encoder
from mpcbandit.net.control import BYE, GONE_S
from mpcbandit.net.inbox import MAX_BUFFERED, Inbox
from mpcbandit.net.link import Link
from mpcbandit.net.netspec import NetSpec
from mpcbandit.net.outbox import Outbox
from mpcbandit.net.peer_control import WATCH_S, PeerControl
from mpcbandit.net.stats import RoundStats

__all__ = ["Link", "Channel", "MAX_BUFFERED", "BUFFERED_MESSAGES_DEFAULT", "GONE_S", "BYE"]

#: without a cap on unread bytes per peer, this many of the largest message
BUFFERED_MESSAGES_DEFAULT = 4


class Channel:
    """Rounds of messages between one party and its peers."""

    def __init__(self, me: str, peers: Iterable[str], link: Link, *, session: str,
                 deadline_s: float, max_bytes: int, net: NetSpec | None = None,
                 link_sessions: Mapping[str, tuple[str, str]] | None = None,
                 max_buffered_bytes: int | None = None):
        """link_sessions: per peer, the (outgoing, incoming) session ids agreed in the hello;
        without it every link uses session. max_buffered_bytes: unread bytes one peer may have
        waiting here (default: BUFFERED_MESSAGES_DEFAULT x max_bytes)."""
        self.me, self.peers, self.link, self.session = me, frozenset(peers), link, session
        session_out = {p: (link_sessions or {}).get(p, (session, session))[0] for p in self.peers}
        session_in = {p: (link_sessions or {}).get(p, (session, session))[1] for p in self.peers}
        self.deadline_s, self.max_bytes = deadline_s, max_bytes
        self.max_buffered_bytes = max_buffered_bytes or BUFFERED_MESSAGES_DEFAULT * max_bytes
        self.stats = RoundStats()
        encoder = Encoder()  # one reusable packer per channel, for both kinds of message
        # the next protocol sequence number per peer: the outbox numbers, a bye counts them
        self._seq_out: dict[str, int] = defaultdict(int)
        self._inbox = inbox = Inbox(me, self.peers, link, session_in, deadline_s=deadline_s,
                                    max_bytes=max_bytes, max_buffered_bytes=self.max_buffered_bytes,
                                    net=net)
        self._control = ctl = PeerControl(me, self.peers, link, encoder=encoder,
                                          session_out=session_out, seq_out=self._seq_out,
                                          inbox=inbox, deadline_s=deadline_s)
        inbox.heed(ctl)  # the pump hands control messages over and acknowledges reads
        self._outbox = Outbox(me, self.peers, link, encoder=encoder,
                              session_out=session_out, seq_out=self._seq_out, inbox=inbox,
                              control=ctl, deadline_s=deadline_s,
                              emulated=bool(net and net.emulated))
        # a round's hot path: the parts' state and methods bound once here, not looked up
        # through them per message (tests/hannun_inproc.py also replaces _take to record)
        self._send = self._outbox.send
        self._buffer, self._count_in, self._finished = inbox.buffer, inbox.count_in, ctl.finished
        self._pump, self._take, self._due = inbox.pump, inbox.take, inbox.due
        self._watch = ctl.watch
        self._idle_since = time.perf_counter()

    @property
    def hops(self) -> int:
        """The longest chain of messages (each sent after the one before it was received) that
        ends here now: the one-way delays this party has waited in sequence."""
        return self._inbox.hops

    @hops.setter
    def hops(self, value: int) -> None:
        self._inbox.hops = value

    # the parts' counters, read as the channel's own (a run's record, tests)
    peak_buffered_bytes = property(lambda self: self._inbox.peak_buffered_bytes,
                                   doc="The most unread bytes any one peer had waiting here.")
    duplicates_dropped = property(lambda self: self._inbox.duplicates_dropped,
                                  doc="Messages dropped as replays or duplicates.")
    control_messages = property(lambda self: self._control.messages,
                                doc="The channel's own messages sent (bye, ack, abort).")
    control_bytes = property(lambda self: self._control.bytes,
                             doc="The bytes of the channel's own messages sent.")

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
        got = self._first_of(label, senders, self.deadline_s)
        if got is None:
            raise PeerTimeout(" or ".join(senders), f"{label}#*", self.deadline_s)
        return got

    def poll(self, label: str, senders: Iterable[str], wait_s: float) -> tuple[str, Any] | None:
        """The next label message from whichever of senders, if one is here or arrives within
        wait_s, else None (a party that serves requests as they come: `mpcbandit serve`).
        Watches the peers as every wait does, also across short polls (PeerGone)."""
        return self._first_of(label, list(senders), wait_s)

    def arrived(self, label: str, peer: str) -> bool:
        """Whether peer's next label message is here (emulated: and due): receiving it will
        not wait. Reads what the link holds, without waiting, until it is here."""
        while self._due(label, peer) > time.perf_counter() and self._pump(0):
            pass
        return self._due(label, peer) <= time.perf_counter()

    def wait_any(self, wanted: Iterable[tuple[str, str]], wait_s: float) -> bool:
        """Wait up to wait_s until one of the (label, peer) messages has arrived (a party with
        several ops under way waits for whichever can go on); whether one has."""
        wanted, end = list(wanted), time.perf_counter() + wait_s
        while True:
            soonest = min([self._due(*w) for w in wanted], default=float("inf"))
            now = time.perf_counter()
            if soonest <= now or now >= end:
                return soonest <= now
            self._watch("|".join(sorted({label for label, _ in wanted})) + "#*", now)
            self._pump(min(soonest, end) - now)

    def _receive(self, label: str, peer: str, deadline_s: float) -> tuple[Any, int]:
        key = (peer, f"{label}#{self._count_in[(peer, label)]}")
        if key in self._buffer:
            return self._take(label, key)
        tag = key[1]
        deadline = time.perf_counter() + deadline_s
        while key not in self._buffer:
            now = time.perf_counter()
            if deadline <= now:
                raise self._inbox.overdue(peer, tag, deadline_s)
            if peer in self._finished:  # its bye came after everything it sent
                raise ProtocolError(peer, tag, "finished its part without sending this message")
            self._watch(tag, now)
            self._pump(min(deadline - now, WATCH_S))
        return self._take(label, key)

    def _first_of(self, label: str, senders: list[str], wait_s: float) -> tuple[str, Any] | None:
        t1 = time.perf_counter()
        st, deadline = self.stats.op(label), t1 + wait_s
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
            now = time.perf_counter()
            if all(p in self._finished for p in senders):
                raise ProtocolError(" and ".join(senders), f"{label}#*", "finished without "
                                    "sending this message")
            self._watch(f"{label}#*", now)
            if deadline > now:
                self._pump(min(deadline - now, WATCH_S))
            elif not self._pump(0):
                return None  # nothing more has arrived: what waited was read above

    def start_clock(self) -> None:
        """Count compute time and hops from now (set-up before the protocol is not the
        protocol's)."""
        self._idle_since = time.perf_counter()
        self.hops = 0

    def finish(self) -> float:
        """The closing handshake: say bye to every peer still running and wait until each has
        acknowledged it (it then has everything sent before it, and has closed its side: it
        never reconnects to this party once it leaves); the seconds it took.

        A peer that reads nothing more for a deadline is named (PeerTimeout), as is one whose
        connection stays down (PeerGone) or that reports a failure (PeerAborted).
        """
        return self._control.finish()

    def abort(self, error: BaseException) -> None:
        """Tell every peer still running that the run failed, where first and why (best effort:
        never waits; a peer that already knows is not told again)."""
        self._control.abort(error)

    def close(self, linger_s: float | None = None) -> None:
        """Release the link, giving what is queued a bounded time to leave."""
        self.link.close(linger_s)
