"""The channel's own messages, beside the protocol's: the closing handshake and the news of a
failure. What each carries, and the checks a receiver makes (pure functions; the channel's
``PeerControl``, peer_control.py, sends and waits).

- ``~bye {"sent": n}``: the sender's last message on the link; it sent n protocol messages
  before it. The receiver checks that it accepted n (nothing lost), answers ``~ack`` with
  ``"bye": true`` and closes its side: it never sends to, nor reconnects to, that peer
  again. The sender leaves only once every bye it sent was so acknowledged, so no party is
  ever left reconnecting to one that has gone (where the host name no longer resolves, each
  attempt stalls libzmq's I/O thread for the resolver's timeout).
- ``~ack {"read": seq, "bye": bool}``: the highest sequence number of the peer's protocol
  messages read (in this party's memory); sent on a bye, and at most once a second while a
  peer's messages are read, so that a sender waiting at its close sees a slow reader
  advance.
- ``~abort {"origin", "reason"}``: the run failed first at ``origin``, for ``reason``.

They travel in the protocol's envelopes (session, sender) under tags no protocol label can
take, with a sequence of their own per link: the protocol's sequence numbers, and so its byte
counts, stay the same however many of these a run sends.
"""

from __future__ import annotations

from typing import Any

from mpcbandit.errors import PartyFailed, PeerAborted, PeerTimeout, ProtocolError, printable

__all__ = ["BYE", "ACK", "ABORT", "GONE_S", "is_control", "lost_before_bye", "acknowledged",
           "aborted", "failure"]

BYE, ACK, ABORT = "~bye", "~ack", "~abort"
#: a peer whose connection has been down this long, not having said bye, is gone
GONE_S = 2.0
#: characters of a failure's reason carried in an abort
REASON_CHARS = 2000


def is_control(tag: str) -> bool:
    """Whether a tag is one of the channel's own (a protocol label never starts with '~')."""
    return tag[:1] == "~"


def lost_before_bye(sender: str, body: Any, accepted: int) -> None:
    """Check a bye against the protocol messages accepted from its sender: a ProtocolError
    naming how many never arrived."""
    sent = body.get("sent") if isinstance(body, dict) else None
    if type(sent) is not int or sent < 0:
        raise ProtocolError(sender, BYE, f"a bye without the count of messages sent ({sent!r})")
    if sent != accepted:
        raise ProtocolError(sender, BYE, f"{sent - accepted} of the {sent} messages it sent never "
                                         "arrived (its connection dropped?)")


def acknowledged(sender: str, body: Any, sent: int) -> tuple[int, bool]:
    """(the sequence number an ack says was read, whether it acknowledges our bye), checked
    against the messages sent."""
    read = body.get("read") if isinstance(body, dict) else None
    if type(read) is not int or not -1 <= read < sent:
        raise ProtocolError(sender, ACK, f"acknowledges {read!r}, not a message sent to it")
    of_bye = body.get("bye", False)
    if type(of_bye) is not bool:
        raise ProtocolError(sender, ACK, f"'bye' is {of_bye!r}, not a bool")
    return read, of_bye


def aborted(sender: str, body: Any) -> PeerAborted:
    """The error an abort from sender reports (peer-controlled text escaped and cut)."""
    ok = (isinstance(body, dict) and isinstance(body.get("origin"), str)
          and isinstance(body.get("reason"), str))
    if not ok:
        raise ProtocolError(sender, ABORT, "an abort without origin and reason")
    return PeerAborted(printable(body["origin"]), printable(body["reason"], REASON_CHARS),
                       via=sender)


def failure(error: BaseException, me: str, peers: frozenset[str]) -> tuple[str, str]:
    """(the party where the run failed first, why) for an error that ended party me."""
    if isinstance(error, PartyFailed):
        return error.party, error.reason
    if isinstance(error, PeerTimeout) and error.peer in peers:
        return error.peer, f"{type(error).__name__}: {error} (noticed by {me})"
    text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    return me, text[:REASON_CHARS]
