"""A party's view of the network: ``exchange`` rounds over a link, with tags, deadlines,
buffering, latency emulation and accounting, and the end of a party's part: the closing
handshake (``finish``) and the news of a failure (``abort``).

A *link* moves frames between named parties (ZeroMQ or in-process queues); the channel knows
nothing of shares or protocols. Tags are ``label#n`` where n counts the messages with that
label on that directed link, so every party derives the same tag without coordination.

Besides the protocol's messages each link carries the channel's own (``control.py``): a party
ends with ``finish``, a bye to every peer still running and a wait until each has read all it
was sent; a party that fails calls ``abort``, and its peers' waits end at once naming it. Every
wait watches every running peer's connection: one down for ``GONE_S`` is gone.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Any, Iterable, Mapping

from mpcbandit.errors import PeerGone, PeerTimeout, ProtocolError, printable
from mpcbandit.net import control
from mpcbandit.net.codec import Encoder, Envelope, decode, frames_nbytes
from mpcbandit.net.control import ABORT, ACK, BYE, GONE_S
from mpcbandit.net.link import Link
from mpcbandit.net.netspec import NetSpec
from mpcbandit.net.stats import RoundStats
from mpcbandit.stop import check_stop

__all__ = ["Link", "Channel", "MAX_BUFFERED", "BUFFERED_MESSAGES_DEFAULT", "GONE_S", "BYE"]

log = logging.getLogger("mpcbandit.net")

#: messages a peer may have waiting in our buffer before it is treated as flooding
MAX_BUFFERED = 100_000
#: without a cap on unread bytes per peer, this many of the largest message
BUFFERED_MESSAGES_DEFAULT = 4
#: during a wait, how often the peers' connections are checked
_WATCH_S = 0.5
#: a reader tells a sender how far it has read at most this often (and 4 times a deadline)
_ACK_EVERY_S = 1.0


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
        self._session_out = {p: (link_sessions or {}).get(p, (session, session))[0] for p in self.peers}
        self._session_in = {p: (link_sessions or {}).get(p, (session, session))[1] for p in self.peers}
        self.deadline_s, self.max_bytes = deadline_s, max_bytes
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
        self._buffer: dict[tuple[str, str], tuple[float, Any, int, int]] = {}
        #: the longest chain of messages (each sent after the one before it was received)
        #: that ends here now: the one-way delays this party has waited in sequence
        self.hops = 0
        self._buffered: dict[str, int] = defaultdict(int)
        self._buffered_bytes: dict[str, int] = defaultdict(int)
        #: the most unread bytes any one peer had waiting here
        self.peak_buffered_bytes = 0
        self._idle_since = time.perf_counter()
        #: when the peers' connections are next checked by receive_any / poll
        self._watch_at = self._idle_since + _WATCH_S
        self.duplicates_dropped = 0
        self._dropped_from: dict[str, int] = defaultdict(int)
        self._accepted: dict[str, int] = defaultdict(int)  # messages accepted per sender
        self._ctl_out: dict[str, int] = defaultdict(int)  # control messages: a sequence apart
        self._ctl_in: dict[str, int] = defaultdict(lambda: -1)
        self._finished: set[str] = set()  # peers that said bye: they send and read nothing more
        self._bye_sent: dict[str, int] = {}  # peers we said bye to: our last message's seq
        self._bye_acked: set[str] = set()  # peers that acknowledged our bye
        self._read_by: dict[str, int] = defaultdict(lambda: -1)  # our highest seq each peer read
        self._acked_at: dict[str, float] = defaultdict(float)  # when we last told a sender
        self._ack_every_s = min(_ACK_EVERY_S, deadline_s / 4)
        #: the channel's own messages sent (bye, ack, abort) and their bytes
        self.control_messages = self.control_bytes = 0

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

    def _due(self, label: str, peer: str) -> float:
        """When peer's next label message may be read (inf: not here yet)."""
        got = self._buffer.get((peer, f"{label}#{self._count_in[(peer, label)]}"))
        return float("inf") if got is None else got[0]

    def _watch(self, tag: str, now: float, peers: Iterable[str] | None = None) -> None:
        """Every wait watches every peer's connection (a dead peer named within seconds)."""
        check_stop()
        if now >= self._watch_at:
            self._watch_peers(tag, peers)
            self._watch_at = now + _WATCH_S

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
                self._pump(min(deadline - now, _WATCH_S))
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
        t0 = time.perf_counter()
        unsent = sorted(self.peers - self._finished)  # byes not queued yet: a full queue
        heard = {p: (self._read_by[p], t0) for p in unsent}
        while True:
            # a bye goes out once there is room behind everything sent before it; meanwhile
            # this party goes on reading (acknowledgements, byes, aborts)
            unsent = [p for p in unsent if p not in self._finished and not self._queue_bye(p)]
            now = time.perf_counter()
            waiting = unsent + sorted(set(self._bye_sent) - self._bye_acked)
            if not waiting:
                return now - t0
            for p in waiting:
                read, since = heard[p]  # a slow reader's acknowledgements keep it waited for
                if self._read_by[p] > read:
                    heard[p] = (self._read_by[p], now)
                elif now - since > self.deadline_s:
                    raise self._unread(p)
            self._watch(BYE, now, waiting)  # one that has read all we sent may leave: not watched
            self._pump(0.05 if unsent else _WATCH_S)

    def _queue_bye(self, peer: str) -> bool:
        """Queue our bye to peer if its queue has room now; whether it was queued."""
        if not self._send_control(peer, BYE, {"sent": self._seq_out[peer]}, wait=False):
            return False
        self._bye_sent[peer] = self._seq_out[peer] - 1
        return True

    def _unread(self, peer: str, tag: str = BYE) -> PeerTimeout:
        """The error for a peer that read nothing more of ours for a deadline."""
        unread = self._bye_sent.get(peer, self._seq_out[peer] - 1) - self._read_by[peer]
        err = PeerTimeout(peer, tag, self.deadline_s)
        what = (f"read none of the last {unread} message(s) sent to it" if unread else
                "read everything sent to it but not acknowledged the bye")
        err.args = (f"peer '{peer}' {what} within {self.deadline_s:g} s (frozen, overloaded or "
                    "gone)" + ("; they may be lost" if unread else ""),)
        return err

    def abort(self, error: BaseException) -> None:
        """Tell every peer still running that the run failed, where first and why (best effort:
        never waits; a peer that already knows is not told again)."""
        origin, reason = control.failure(error, self.me, self.peers)
        skip = {origin, getattr(error, "via", None)}
        for peer in sorted(self.peers - self._finished - skip):
            self._send_control(peer, ABORT, {"origin": origin, "reason": reason}, wait=False)

    def close(self, linger_s: float | None = None) -> None:
        """Release the link, giving what is queued a bounded time to leave."""
        self.link.close(linger_s)

    # ------------------------------------------------------------ internals

    def _send(self, label: str, peer: str, body: Any) -> int:
        if peer not in self.peers:
            raise ValueError(f"{self.me} has no channel to '{peer}' (peers: {sorted(self.peers)})")
        n = self._count_out[(peer, label)]
        self._count_out[(peer, label)] = n + 1
        tag = f"{label}#{n}"
        seq = self._seq_out[peer]
        self._seq_out[peer] = seq + 1
        frames = self._encoder.encode(Envelope(
            self._session_out[peer], seq, self.me, tag, body, hops=self.hops,
            sent=time.perf_counter() if self._emulated else None))
        if peer in self._finished:  # it reads nothing more: what it needed, it had
            log.debug("not sending %s to %s: it has finished", tag, peer)
        elif not self.link.try_send(peer, frames):
            self._send_when_room(peer, tag, frames)
        return frames_nbytes(frames)

    def _send_when_room(self, peer: str, tag: str, frames: list) -> None:
        """Queue a message once peer's queue has room (it reads slowly), reading meanwhile what
        arrives: an abort, or a peer gone, ends the wait as any other."""
        deadline = time.perf_counter() + self.deadline_s
        watch_at = time.perf_counter() + _WATCH_S
        while True:
            if self.link.wait_room(peer, 0.05) and self.link.try_send(peer, frames):
                return
            while self._pump(0):
                pass
            now = time.perf_counter()
            if now >= deadline:
                raise self._unread(peer, tag)
            if peer in self._finished:
                return
            check_stop()
            if now >= watch_at:
                self._watch_peers(tag)
                watch_at = now + _WATCH_S

    def _send_control(self, peer: str, tag: str, body: Any, wait: bool = True) -> bool:
        """Send one of the channel's own messages (not counted as the protocol's); without
        wait only if peer's queue has room now. Whether it was queued."""
        seq = self._ctl_out[peer]
        frames = self._encoder.encode(Envelope(self._session_out[peer], seq, self.me, tag, body))
        if wait:
            self.link.send(peer, frames)
        elif not self.link.try_send(peer, frames):
            return False
        log.debug("%s to %s: %r", tag, peer, body)
        self._ctl_out[peer] = seq + 1
        self.control_messages += 1
        self.control_bytes += frames_nbytes(frames)
        return True

    def _watch_peers(self, tag: str, peers: Iterable[str] | None = None) -> None:
        """Raise PeerGone for a peer (of peers, else every running one) whose connection has
        been down for GONE_S."""
        down_for = getattr(self.link, "down_for", None)
        if down_for is None:
            return
        watched = sorted(self.peers - self._finished) if peers is None else peers
        gone = [p for p in watched if (down_for(p) or 0.0) >= GONE_S]
        if gone:
            while self._pump(0):  # what it said before it went (a bye?) may still be unread
                pass
            for peer in gone:
                if peer not in self._finished:
                    raise PeerGone(peer, tag, down_for(peer) or GONE_S)

    def _receive(self, label: str, peer: str, deadline_s: float) -> tuple[Any, int]:
        key = (peer, f"{label}#{self._count_in[(peer, label)]}")
        if key in self._buffer:
            return self._take(label, key)
        tag = key[1]
        deadline = time.perf_counter() + deadline_s
        while key not in self._buffer:
            now = time.perf_counter()
            if deadline <= now:
                raise self._timeout(peer, tag, deadline_s)
            if peer in self._finished:  # its bye came after everything it sent
                raise ProtocolError(peer, tag, "finished its part without sending this message")
            self._watch(tag, now)
            self._pump(min(deadline - now, _WATCH_S))
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
        deliver_at, body, nbytes, hops = self._buffer.pop(key)
        self.hops = max(self.hops, hops + 1)
        peer = key[0]
        self._count_in[(peer, label)] += 1
        self._buffered[peer] -= 1
        self._buffered_bytes[peer] -= nbytes
        if deliver_at:  # an emulated network: hand it over when it would have arrived
            delay = deliver_at - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        return body, nbytes

    def _pump(self, timeout_s: float) -> bool:
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
        if control.is_control(tag):
            self._control(sender, tag, env)
            return True
        if env.seq <= self._seq_in[sender]:
            self.duplicates_dropped += 1  # replayed or duplicated: already delivered
            self._dropped_from[sender] += 1
            return True
        self._seq_in[sender] = env.seq
        self._accepted[sender] += 1
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
        deliver_at = self._deliver_at(sender, arrived, env.sent, nbytes) if self._emulated else 0.0
        self._buffer[(sender, tag)] = (deliver_at, env.body, nbytes, env.hops)
        self._buffered[sender] += 1
        self._buffered_bytes[sender] = waiting
        if waiting > self.peak_buffered_bytes:
            self.peak_buffered_bytes = waiting
        now = time.monotonic()
        if now - self._acked_at[sender] >= self._ack_every_s and sender not in self._bye_sent:
            self._acked_at[sender] = now  # a sender at its close sees us read on
            self._send_control(sender, ACK, {"read": env.seq}, wait=False)
        return True

    def _control(self, sender: str, tag: str, env: Envelope) -> None:
        """Act on one of the channel's own messages from sender (control.py)."""
        if env.seq <= self._ctl_in[sender]:
            return  # replayed or duplicated
        self._ctl_in[sender] = env.seq
        log.debug("%s from %s: %s", tag, sender, printable(repr(env.body)))
        if tag == ACK:
            read, of_bye = control.acknowledged(sender, env.body, self._seq_out[sender])
            self._read_by[sender] = max(self._read_by[sender], read)
            if of_bye and sender in self._bye_sent:
                self._bye_acked.add(sender)
        elif tag == BYE:
            control.lost_before_bye(sender, env.body, self._accepted[sender])
            self._finished.add(sender)
            # the sender leaves once it has this: close our side first, so nothing of ours
            # ever reconnects to it (or looks up its host name) once it is gone
            self._send_control(sender, ACK, {"read": self._seq_in[sender], "bye": True})
            self.link.forget(sender)
        elif tag == ABORT:
            raise control.aborted(sender, env.body)
        else:
            raise ProtocolError(sender, tag, "unknown control message")

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
