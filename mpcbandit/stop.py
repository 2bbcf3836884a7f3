"""A request to stop this party (SIGTERM), honoured where the party can stop cleanly: in its
waits and between iterations, so that it can still tell its peers why it stops.

A signal handler cannot raise safely: an exception raised while a C extension releases a
buffer (pyzmq's frames) is printed and dropped, and the party would run on."""

from __future__ import annotations

from mpcbandit.errors import Stopped

__all__ = ["request_stop", "check_stop"]

_reason: str | None = None


def request_stop(reason: str) -> None:
    """Ask this process's party to stop at its next wait or iteration."""
    global _reason
    _reason = reason


def check_stop() -> None:
    """Raise Stopped if a stop was requested."""
    if _reason is not None:
        raise Stopped(_reason)
