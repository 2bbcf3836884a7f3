"""A party's answer to a request, apart from HTTP (server.py sends it): a status, a JSON body
and extra headers; a refusal's body names why in ``error``."""

from __future__ import annotations

from dataclasses import dataclass, field

from mpcbandit.serve.requests import BadRequest

__all__ = ["Reply", "error", "bad_request"]


@dataclass(frozen=True)
class Reply:
    """An answer: HTTP status, JSON body, extra headers."""

    status: int
    body: dict
    headers: dict[str, str] = field(default_factory=dict)


def error(status: int, message: str, **extra) -> Reply:
    """A refusal: its status, why in words, and any fields the client can act on."""
    return Reply(status, {"error": message, **extra})


def bad_request(e: BadRequest) -> Reply:
    """A 400 naming the body's field at fault."""
    return error(400, str(e), field=e.field)
