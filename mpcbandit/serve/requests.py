"""The API's request bodies, checked: each is a JSON object with exactly its fields, of the
right types, finite, of the declared size; anything else is a BadRequest naming the field."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from mpcbandit.errors import printable

__all__ = ["BadRequest", "ContextRequest", "DecisionRequest", "RewardRequest",
           "parse_context", "parse_decision", "parse_reward", "max_body_bytes", "MAX_ID_CHARS"]

#: an id is the application's key for one request: long enough for a UUID or a hash, no more
MAX_ID_CHARS = 200


class BadRequest(Exception):
    """A request body the API refuses (400); names the field and what is wrong with it."""

    def __init__(self, field: str, reason: str):
        self.field = field
        self.reason = reason
        super().__init__(f"field '{field}': {reason}")


@dataclass(frozen=True)
class ContextRequest:
    """A feature holder's slice of one request's context."""

    id: str
    features: list[float]


@dataclass(frozen=True)
class DecisionRequest:
    """The arm-puller's application asking which arm to pull for a request."""

    id: str


@dataclass(frozen=True)
class RewardRequest:
    """The reward holder's application reporting the reward of a decided request."""

    id: str
    reward: float


def max_body_bytes(features: int) -> int:
    """The largest body a party accepts: room for its feature count written out in full."""
    return 4096 + 40 * features


def _object(raw: bytes, fields: tuple[str, ...]) -> dict:
    try:
        # what json.loads(raw, parse_constant=...) does, without a new decoder per request
        body = _DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))
    except UnicodeDecodeError:
        raise BadRequest("body", "not UTF-8 text") from None
    except ValueError as e:
        raise BadRequest("body", f"not JSON ({e})") from None
    except RecursionError:  # [[[[...: deeper than the decoder goes; no request nests at all
        raise BadRequest("body", "nested too deeply") from None
    if not isinstance(body, dict):
        raise BadRequest("body", f"expected a JSON object with {', '.join(fields)}, got "
                                 f"{type(body).__name__}")
    for name in fields:
        if name not in body:
            raise BadRequest(name, "missing")
    extra = sorted(set(body) - set(fields))
    if extra:
        raise BadRequest(printable(extra[0]), f"unknown field (allowed: {', '.join(fields)})")
    return body


def _no_constant(name: str) -> float:
    raise BadRequest("body", f"{name} is not a number JSON allows")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _id(body: dict) -> str:
    value = body["id"]
    if not isinstance(value, str):
        raise BadRequest("id", f"expected a string, got {type(value).__name__}")
    if not value or len(value) > MAX_ID_CHARS:
        raise BadRequest("id", f"expected 1 to {MAX_ID_CHARS} characters, got {len(value)}")
    if not value.isprintable():
        raise BadRequest("id", f"{printable(value)!r} holds control characters")
    return value


def _number(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(field, f"expected a number, got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an integer too large for a float
        raise BadRequest(field, "is too large for a float64") from None
    if not math.isfinite(number):  # 1e400 parses as inf
        raise BadRequest(field, f"{value!r} is not a finite number")
    return number


def _bounded(value: float, max_abs: float | None, field: str) -> None:
    if max_abs is not None and abs(value) > max_abs:
        raise BadRequest(field, f"{value!r} is beyond ±{max_abs:g}, the largest magnitude this "
                                "protocol's service takes")


def parse_context(raw: bytes, features: int, max_norm: float | None = None,
                  norm_rule: str = "", max_abs: float | None = None) -> ContextRequest:
    """A POST /v1/contexts body: an id and exactly `features` finite numbers (of Euclidean
    norm at most max_norm, norm_rule saying why, and each of magnitude at most max_abs, where
    the protocol bounds them)."""
    body = _object(raw, ("id", "features"))
    rid = _id(body)
    values = body["features"]
    if not isinstance(values, list):
        raise BadRequest("features", f"expected a list of numbers, got {type(values).__name__}")
    if len(values) != features:
        raise BadRequest("features", f"expected {features} numbers (this party's feature "
                                     f"count), got {len(values)}")
    if all(type(v) is float for v in values):  # JSON's decimals (the usual body): checked at once
        numbers = values
        norm = math.sqrt(math.fsum(v * v for v in numbers))
        if not math.isfinite(norm):  # a value that overflowed (1e400): say which one
            numbers = [_number(v, f"features[{i}]") for i, v in enumerate(values)]
    else:
        numbers = [_number(v, f"features[{i}]") for i, v in enumerate(values)]
        norm = math.sqrt(math.fsum(v * v for v in numbers))
    if max_abs is not None:
        for i, v in enumerate(numbers):
            _bounded(v, max_abs, f"features[{i}]")
    if max_norm is not None and norm > max_norm * (1 + 1e-9):
        raise BadRequest("features", f"norm {norm:.6g} is above {max_norm:g}, the most the "
                                     f"protocol takes: {norm_rule or 'scale your slice'}")
    return ContextRequest(rid, numbers)


def parse_decision(raw: bytes) -> DecisionRequest:
    """A POST /v1/decisions body: an id."""
    return DecisionRequest(_id(_object(raw, ("id",))))


def parse_reward(raw: bytes, values: tuple[float, ...] = (),
                 max_abs: float | None = None) -> RewardRequest:
    """A POST /v1/rewards body: an id and a finite reward (one of values, if the protocol
    takes only those; of magnitude at most max_abs, if it bounds them)."""
    body = _object(raw, ("id", "reward"))
    reward = _number(body["reward"], "reward")
    _bounded(reward, max_abs, "reward")
    if values and reward not in values:
        raise BadRequest("reward", f"{reward!r}: this protocol takes only "
                                   f"{' or '.join(f'{v:g}' for v in values)}")
    return RewardRequest(_id(body), reward)
