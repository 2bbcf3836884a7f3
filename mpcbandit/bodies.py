"""Checks of a peer's message body where it is received (in a protocol, or in an MPC op): a
body of the wrong type, shape or dtype is a ProtocolError naming the peer and the tag, never a
numpy error later. A leaf module: the MPC engine and the protocols both use it."""

from __future__ import annotations

import math

import numpy as np

from mpcbandit.errors import ProtocolError

__all__ = ["expect_array", "expect_bytes", "expect_fields", "expect_field", "expect_index",
           "expect_bool", "expect_real", "expect_seconds", "expect_finite", "kind_of"]


def kind_of(body) -> str:
    """'a str', 'an int', 'a float64 array (2, 2)': what a peer sent, for an error."""
    if isinstance(body, np.ndarray):
        return f"a {body.dtype} array {body.shape}"
    name = type(body).__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


def expect_array(body, shape: tuple[int, ...], peer: str, tag: str,
                 dtype: type = np.float64) -> np.ndarray:
    """body as an array of exactly this shape and dtype; a float array also finite."""
    if not isinstance(body, np.ndarray) or body.shape != tuple(shape) or body.dtype != dtype:
        raise ProtocolError(peer, tag, f"expected a {np.dtype(dtype)} array of shape "
                            f"{tuple(shape)}, got {kind_of(body)}")
    # one NaN in a Gram matrix poisons every estimate built from it, silently: refuse it here
    # (ring arrays are integers: every value is a valid share)
    if body.dtype.kind == "f" and not np.isfinite(body).all():
        raise ProtocolError(peer, tag, f"{kind_of(body)} holds values that are not finite "
                                       f"(NaN or inf), first at {_first_non_finite(body)}")
    return body


def expect_finite(values: list[float], peer: str, tag: str, what: str) -> list[float]:
    """values (floats a peer sent, e.g. decrypted scores) if all are finite, else a
    ProtocolError naming what and the first position that is not."""
    if not all(map(math.isfinite, values)):
        at = next(i for i, v in enumerate(values) if not math.isfinite(v))
        raise ProtocolError(peer, tag, f"{what} at position {at} is {values[at]!r}: not finite")
    return values


def _first_non_finite(body: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(~np.isfinite(body))[0])


def expect_bytes(body, size: int, peer: str, tag: str) -> bytes:
    """body as exactly size bytes (a ciphertext)."""
    if not isinstance(body, bytes) or len(body) != size:
        got = f"{len(body)} bytes" if isinstance(body, bytes) else kind_of(body)
        raise ProtocolError(peer, tag, f"expected {size} bytes of ciphertext, got {got}")
    return body


def expect_fields(body, fields: tuple[str, ...], peer: str, tag: str) -> dict:
    """body as a dict holding at least these fields."""
    if not isinstance(body, dict):
        raise ProtocolError(peer, tag, f"expected a dict with {', '.join(map(repr, fields))}, "
                                       f"got {kind_of(body)}")
    missing = [f for f in fields if f not in body]
    if missing:
        raise ProtocolError(peer, tag, f"message lacks {', '.join(missing)}")
    return body


def expect_field(body, key: str, kind: type, peer: str, tag: str):
    """Field key of a dict body, of type kind."""
    value = expect_fields(body, (key,), peer, tag)[key]
    if not isinstance(value, kind):
        raise ProtocolError(peer, tag, f"expected a {kind.__name__} {key!r}, got {kind_of(value)}")
    return value


def expect_index(body, count: int, peer: str, tag: str) -> int:
    """body as an int in 0..count-1 (an arm, an agent, a slot)."""
    if type(body) is not int or not 0 <= body < count:
        shown = repr(body)[:40] if isinstance(body, (int, float, str)) else kind_of(body)
        raise ProtocolError(peer, tag, f"expected an index in 0..{count - 1}, got {shown}")
    return body


def expect_bool(body, peer: str, tag: str) -> bool:
    """body as a bool (a flag, a decision)."""
    if type(body) is not bool:
        raise ProtocolError(peer, tag, f"expected a bool, got {kind_of(body)}")
    return body


def expect_real(body, peer: str, tag: str) -> float:
    """body as a finite real number (a reward)."""
    if type(body) not in (int, float) or not np.isfinite(body):
        shown = body if isinstance(body, float) else kind_of(body)
        raise ProtocolError(peer, tag, f"expected a finite number, got {shown}")
    return float(body)


def expect_seconds(body, peer: str, tag: str) -> float:
    """body as a duration: a finite real number of seconds, 0 or more."""
    seconds = expect_real(body, peer, tag)
    if seconds < 0:
        raise ProtocolError(peer, tag, f"expected seconds (0 or more), got {seconds}")
    return seconds
