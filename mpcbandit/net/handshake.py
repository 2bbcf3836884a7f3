"""The hello's content: what two parties check before any protocol message, and the session
of each link that follows from it.

Each party greets with the digest of what it believes the run is (protocol, seed, section,
party table, security), the record itself, so that a mismatch can be named key by key, what
it knows of the data the parties must share (``data.*``: the id list's digest and length),
and a fresh random nonce. Every directed link's session id hashes the run's base session with
both ends' nonces: a message recorded in an earlier run never matches, in any security mode.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from typing import Any

import msgpack

from mpcbandit.errors import ProtocolError

__all__ = ["Greeting", "make_greeting", "read_greeting", "check_same_run", "link_sessions"]

_VERSION = 1
#: the hello's fields about a party's data (mpcbandit/data/folder.py), not its config
DATA_KEYS = "data."
_NONCE_BYTES = 16


@dataclass(frozen=True)
class Greeting:
    """What a party says in its hello."""

    digest: str
    fields: dict[str, Any]
    nonce: bytes


def make_greeting(digest: str, fields: dict[str, Any]) -> tuple[Greeting, bytes]:
    """A greeting with a fresh nonce, and its wire form."""
    g = Greeting(digest, fields, secrets.token_bytes(_NONCE_BYTES))
    return g, msgpack.packb({"v": _VERSION, "digest": digest, "fields": fields, "nonce": g.nonce})


def read_greeting(peer: str, raw: bytes) -> Greeting:
    """Parse a peer's hello, or a ProtocolError naming the peer."""
    try:
        msg = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception as e:  # noqa: BLE001 - any parse failure is the peer's malformed hello
        raise ProtocolError(peer, "hello", f"not a greeting ({type(e).__name__}); is the peer "
                            "an older mpcbandit?") from None
    ok = (isinstance(msg, dict) and msg.get("v") == _VERSION and isinstance(msg.get("digest"), str)
          and isinstance(msg.get("fields"), dict) and isinstance(msg.get("nonce"), bytes)
          and len(msg["nonce"]) == _NONCE_BYTES)
    if not ok:
        raise ProtocolError(peer, "hello", f"malformed greeting (expected version {_VERSION} "
                            "with digest, fields and a 16-byte nonce)")
    return Greeting(msg["digest"], msg["fields"], msg["nonce"])


def check_same_run(peer: str, mine: Greeting, theirs: Greeting, shown: int = 5) -> None:
    """Raise a ProtocolError naming the keys where the peer's config, or the data it holds,
    differs from ours. Data keys (``data.*``: the id list's digest and length) are compared
    between two parties that both declare data; a role that reads none declares nothing."""
    both_data = _declares_data(mine.fields) and _declares_data(theirs.fields)
    keys = sorted(k for k in set(mine.fields) | set(theirs.fields)
                  if (both_data or not k.startswith(DATA_KEYS))
                  and (mine.fields.get(k) != theirs.fields.get(k) or (k in mine.fields) != (k in theirs.fields)))
    if theirs.digest == mine.digest and not keys:
        return
    diffs = "; ".join(f"{k}: mine {mine.fields.get(k, '(absent)')!r}, theirs "
                      f"{theirs.fields.get(k, '(absent)')!r}" for k in keys[:shown])
    more = f" and {len(keys) - shown} more" if len(keys) > shown else ""
    if keys and all(k.startswith(DATA_KEYS) for k in keys):
        rows = ("data.rows" in keys and f": its id list has {theirs.fields.get('data.rows')} ids, "
                f"ours {mine.fields.get('data.rows')}") or ""
        what = f"holds other data than ours{rows} (its id list differs: docs/data.md)"
    else:
        what = "runs a different config"
    raise ProtocolError(peer, "hello", f"{what}: {diffs or 'digest differs'}{more}")


def _declares_data(fields: dict[str, Any]) -> bool:
    return any(k.startswith(DATA_KEYS) for k in fields)


def _session(base: str, sender: str, receiver: str, sender_nonce: bytes,
             receiver_nonce: bytes) -> str:
    h = hashlib.sha256()
    for part in (base.encode(), sender.encode(), receiver.encode(), sender_nonce, receiver_nonce):
        h.update(len(part).to_bytes(4, "big") + part)
    return h.hexdigest()[:24]


def link_sessions(base: str, me: str, mine: Greeting,
                  peers: dict[str, Greeting]) -> dict[str, tuple[str, str]]:
    """Per peer, the (outgoing, incoming) session ids of the links between us."""
    return {p: (_session(base, me, p, mine.nonce, g.nonce), _session(base, p, me, g.nonce, mine.nonce))
            for p, g in peers.items()}
