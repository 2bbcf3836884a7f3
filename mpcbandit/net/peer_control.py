"""What a party knows of each peer beyond its protocol messages, and the channel's own messages
that tell it (control.py: ack, bye, abort): how far a peer has read ours, whether it said bye,
whether its connection is down; the closing handshake (``finish``) and the news of a failure
(``abort``).

Every wait watches every running peer's connection: one down for ``GONE_S`` is gone.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Any, Iterable, Mapping

from mpcbandit.errors import PeerGone, PeerTimeout, ProtocolError, printable
from mpcbandit.net import control
from mpcbandit.net.codec import Encoder, Envelope, frames_nbytes
from mpcbandit.net.control import ABORT, ACK, BYE, GONE_S
from mpcbandit.net.inbox import Inbox
from mpcbandit.net.link import Link
from mpcbandit.stop import check_stop

__all__ = ["PeerControl", "WATCH_S"]

log = logging.getLogger("mpcbandit.net")

#: during a wait, how often the peers' connections are checked
WATCH_S = 0.5


class PeerControl:
    """A party's control messages to and from its peers, and the watch on their connections."""

    def __init__(self, me: str, peers: frozenset[str], link: Link, *, encoder: Encoder,
                 session_out: Mapping[str, str], seq_out: Mapping[str, int], inbox: Inbox,
                 deadline_s: float):
        """seq_out: the channel's next protocol sequence number per peer (what a bye counts);
        inbox: what a bye checks against, and what every wait here reads on."""
        self.me, self.peers, self.link, self.deadline_s = me, peers, link, deadline_s
        self._encoder, self._session_out, self._seq_out = encoder, session_out, seq_out
        self._inbox = inbox
        self._pump = inbox.pump
        self._ctl_out: dict[str, int] = defaultdict(int)  # control messages: a sequence apart
        self._ctl_in: dict[str, int] = defaultdict(lambda: -1)
        self.finished: set[str] = set()  # peers that said bye: they send and read nothing more
        self.bye_sent: dict[str, int] = {}  # peers we said bye to: our last message's seq
        self._bye_acked: set[str] = set()  # peers that acknowledged our bye
        self._read_by: dict[str, int] = defaultdict(lambda: -1)  # our highest seq each peer read
        #: when the peers' connections are next checked by a wait
        self._watch_at = time.perf_counter() + WATCH_S
        #: the control messages sent (bye, ack, abort) and their bytes
        self.messages = self.bytes = 0

    def send(self, peer: str, tag: str, body: Any, wait: bool = True) -> bool:
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
        self.messages += 1
        self.bytes += frames_nbytes(frames)
        return True

    def receive(self, sender: str, tag: str, env: Envelope) -> None:
        """Act on one of the channel's own messages from sender (control.py)."""
        if env.seq <= self._ctl_in[sender]:
            return  # replayed or duplicated
        self._ctl_in[sender] = env.seq
        log.debug("%s from %s: %s", tag, sender, printable(repr(env.body)))
        if tag == ACK:
            read, of_bye = control.acknowledged(sender, env.body, self._seq_out[sender])
            self._read_by[sender] = max(self._read_by[sender], read)
            if of_bye and sender in self.bye_sent:
                self._bye_acked.add(sender)
        elif tag == BYE:
            control.lost_before_bye(sender, env.body, self._inbox.accepted[sender])
            self.finished.add(sender)
            # the sender leaves once it has this: close our side first, so nothing of ours
            # ever reconnects to it (or looks up its host name) once it is gone
            self.send(sender, ACK, {"read": self._inbox.seq_in[sender], "bye": True})
            self.link.forget(sender)
        elif tag == ABORT:
            raise control.aborted(sender, env.body)
        else:
            raise ProtocolError(sender, tag, "unknown control message")

    def finish(self) -> float:
        """The closing handshake: a bye to every peer still running, then a wait until each
        has acknowledged it; the seconds it took (Channel.finish)."""
        t0 = time.perf_counter()
        unsent = sorted(self.peers - self.finished)  # byes not queued yet: a full queue
        heard = {p: (self._read_by[p], t0) for p in unsent}
        while True:
            # a bye goes out once there is room behind everything sent before it; meanwhile
            # this party goes on reading (acknowledgements, byes, aborts)
            unsent = [p for p in unsent if p not in self.finished and not self._queue_bye(p)]
            now = time.perf_counter()
            waiting = unsent + sorted(set(self.bye_sent) - self._bye_acked)
            if not waiting:
                return now - t0
            for p in waiting:
                read, since = heard[p]  # a slow reader's acknowledgements keep it waited for
                if self._read_by[p] > read:
                    heard[p] = (self._read_by[p], now)
                elif now - since > self.deadline_s:
                    raise self.unread(p)
            self.watch(BYE, now, waiting)  # one that has read all we sent may leave: not watched
            self._pump(0.05 if unsent else WATCH_S)

    def _queue_bye(self, peer: str) -> bool:
        """Queue our bye to peer if its queue has room now; whether it was queued."""
        if not self.send(peer, BYE, {"sent": self._seq_out[peer]}, wait=False):
            return False
        self.bye_sent[peer] = self._seq_out[peer] - 1
        return True

    def unread(self, peer: str, tag: str = BYE) -> PeerTimeout:
        """The error for a peer that read nothing more of ours for a deadline."""
        unread = self.bye_sent.get(peer, self._seq_out[peer] - 1) - self._read_by[peer]
        err = PeerTimeout(peer, tag, self.deadline_s)
        what = (f"read none of the last {unread} message(s) sent to it" if unread else
                "read everything sent to it but not acknowledged the bye")
        err.args = (f"peer '{peer}' {what} within {self.deadline_s:g} s (frozen, overloaded or "
                    "gone)" + ("; they may be lost" if unread else ""),)
        return err

    def abort(self, error: BaseException) -> None:
        """Tell every peer still running where the run failed first and why (Channel.abort)."""
        origin, reason = control.failure(error, self.me, self.peers)
        skip = {origin, getattr(error, "via", None)}
        for peer in sorted(self.peers - self.finished - skip):
            self.send(peer, ABORT, {"origin": origin, "reason": reason}, wait=False)

    def watch(self, tag: str, now: float, peers: Iterable[str] | None = None) -> None:
        """Every wait watches every peer's connection (a dead peer named within seconds)."""
        check_stop()
        if now >= self._watch_at:
            self.watch_peers(tag, peers)
            self._watch_at = now + WATCH_S

    def watch_peers(self, tag: str, peers: Iterable[str] | None = None) -> None:
        """Raise PeerGone for a peer (of peers, else every running one) whose connection has
        been down for GONE_S."""
        down_for = getattr(self.link, "down_for", None)
        if down_for is None:
            return
        watched = sorted(self.peers - self.finished) if peers is None else peers
        gone = [p for p in watched if (down_for(p) or 0.0) >= GONE_S]
        if gone:
            self._inbox.drain()  # what it said before it went (a bye?) may still be unread
            for peer in gone:
                if peer not in self.finished:
                    raise PeerGone(peer, tag, down_for(peer) or GONE_S)
