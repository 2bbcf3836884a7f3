"""Exceptions shared by every layer; each names what failed and where."""

import re

__all__ = ["MpcBanditError", "ConfigError", "DataError", "ProtocolError", "PeerTimeout", "PeerGone",
           "PartyFailed", "PeerAborted", "ReplayError", "Stopped",
           "printable"]


def printable(text: str, limit: int = 80) -> str:
    """text as it may be shown: control characters escaped, cut at limit (a peer controls it)."""
    shown = text if text.isprintable() else text.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= limit else shown[:limit] + f"...({len(text)} chars)"


class MpcBanditError(Exception):
    """Base class of every error mpcbandit raises on purpose."""


class ConfigError(MpcBanditError):
    """A config value is missing, unknown, of the wrong type or impossible; names the key path."""

    def __init__(self, key: str, reason: str):
        self.key = key
        self.reason = reason
        super().__init__(f"config key '{key}': {reason}")


class ProtocolError(MpcBanditError):
    """A message broke the wire protocol; names the peer and the message tag."""

    def __init__(self, peer: str, tag: str, reason: str):
        self.peer = peer
        self.tag = tag
        self.reason = reason
        super().__init__(f"protocol error from peer '{printable(peer)}' (tag '{printable(tag)}'): "
                         f"{printable(reason, 2000)}")

    @classmethod
    def found_in(cls, text: str) -> "ProtocolError | None":
        """The protocol error quoted in text (a failed party's reason, a log line), or None."""
        m = _PROTOCOL_ERROR.search(text)
        return cls(m[1], m[2], m[3]) if m else None


#: ProtocolError's message as it reads in text: peer, tag, reason (the pattern of __init__)
_PROTOCOL_ERROR = re.compile(r"protocol error from peer '([^']*)' \(tag '([^']*)'\): (.*)")


class PeerTimeout(MpcBanditError):
    """A peer stayed silent past the deadline; names the peer and the awaited tag."""

    def __init__(self, peer: str, tag: str, deadline_s: float):
        self.peer = peer
        self.tag = tag
        self.deadline_s = deadline_s
        super().__init__(f"no message from peer '{peer}' with tag '{tag}' within {deadline_s:g} s")


class DataError(MpcBanditError, ValueError):
    """A data file is missing, unreadable or damaged; names the file."""


class PeerGone(PeerTimeout):
    """A peer's connection dropped and stayed down while we waited for it; names the peer."""

    def __init__(self, peer: str, tag: str, down_s: float):
        super().__init__(peer, tag, down_s)
        self.args = (f"peer '{peer}' is gone: its connection has been down for {down_s:.1f} s "
                     f"while waiting for tag '{tag}' (it died or its host is unreachable)",)


class ReplayError(MpcBanditError):
    """`run --plaintext --replay DIR` cannot replay DIR's run; names the folder and why."""


class PartyFailed(MpcBanditError):
    """A party process of a local run failed; names the party and its error."""

    def __init__(self, party: str, reason: str):
        self.party = party
        self.reason = reason
        super().__init__(f"party '{party}' failed: {reason}")


class PeerAborted(PartyFailed):
    """A peer said the run failed: the party where it failed first and why, and who told us."""

    def __init__(self, party: str, reason: str, via: str):
        super().__init__(party, reason)
        self.via = via
        if via != party:
            self.args = (f"{self.args[0]} (told by '{via}')",)


class Stopped(MpcBanditError):
    """The party was told to stop (SIGTERM): its peers are told, not left waiting."""
