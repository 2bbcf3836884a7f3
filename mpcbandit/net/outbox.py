"""A channel's protocol messages out: each link's tags and sequence numbers, the envelope, and
the wait for room when a slow reader's queue is full (reading meanwhile, so an abort or a
peer gone ends it as it ends any other wait)."""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from typing import Any, Mapping

from mpcbandit.net.codec import Encoder, Envelope, frames_nbytes
from mpcbandit.net.inbox import Inbox
from mpcbandit.net.link import Link
from mpcbandit.net.peer_control import WATCH_S, PeerControl
from mpcbandit.stop import check_stop

__all__ = ["Outbox"]

log = logging.getLogger("mpcbandit.net")


class Outbox:
    """Protocol messages from one party to its peers, tagged, numbered and queued on the link."""

    def __init__(self, me: str, peers: frozenset[str], link: Link, *, encoder: Encoder,
                 session_out: Mapping[str, str], seq_out: dict[str, int], inbox: Inbox,
                 control: PeerControl, deadline_s: float, emulated: bool):
        """seq_out: the next sequence number per peer, shared with control (what a bye counts);
        inbox: whose hops each message carries, and what a wait for room reads on."""
        self.me, self.peers, self.link, self.deadline_s = me, peers, link, deadline_s
        self._encoder, self._session_out, self._seq_out = encoder, session_out, seq_out
        self._count_out: dict[tuple[str, str], int] = defaultdict(int)  # sent per (peer, label)
        self._inbox, self._control, self._emulated = inbox, control, emulated
        self._finished = control.finished  # read per message: bound once

    def send(self, label: str, peer: str, body: Any) -> int:
        """Queue peer's next label message (waiting for room if its queue is full); its bytes."""
        if peer not in self.peers:
            raise ValueError(f"{self.me} has no channel to '{peer}' (peers: {sorted(self.peers)})")
        n = self._count_out[(peer, label)]
        self._count_out[(peer, label)] = n + 1
        tag = f"{label}#{n}"
        seq = self._seq_out[peer]
        self._seq_out[peer] = seq + 1
        frames = self._encoder.encode(Envelope(
            self._session_out[peer], seq, self.me, tag, body, hops=self._inbox.hops,
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
        watch_at = time.perf_counter() + WATCH_S
        while True:
            if self.link.wait_room(peer, 0.05) and self.link.try_send(peer, frames):
                return
            self._inbox.drain()
            now = time.perf_counter()
            if now >= deadline:
                raise self._control.unread(peer, tag)
            if peer in self._finished:
                return
            check_stop()
            if now >= watch_at:
                self._control.watch_peers(tag)
                watch_at = now + WATCH_S
