"""Wire codec: msgpack envelopes with numpy arrays, never pickle.

A message is the frames ``[envelope, *buffers]``; the envelope is the msgpack array
``[v, session, seq, hops, sent, sender, tag, body]``: ``hops`` is the longest chain of messages,
each sent after the one before it was received, that ends with this one's sending (a Lamport
clock of the one-way delays a run waits in sequence, docs/summary.md), sent as a float64 so
that it takes the same 9 bytes in every message whatever its value: a message's size, and so
a run's byte counts, never depend on timing (the order a dealer served requests in); ``sent`` is the
sender's monotonic clock when it sent the message on an emulated network, nil otherwise (the
emulated delay runs from there: channel.py). Inside ``body`` a numpy array is a msgpack extension:
``ExtType(1, header + bytes)`` inline, or ``ExtType(2, header + frame index)`` for an array of
at least ``OUT_OF_BAND_BYTES``, which travels as its own buffer frame without copying; the
header is the dtype string (3 ASCII bytes), the number of dimensions (1 byte) and each size
(little-endian uint64). Integers beyond 64 bits (Paillier ciphertexts) are ``ExtType(3,
signed little-endian bytes)``. Extensions keep decoding cheap: only they call back into
Python, not every map. Decoding checks everything a peer could get wrong and raises
ProtocolError naming the peer and the tag.
"""

from __future__ import annotations

import functools
import math
import struct
from typing import Any, NamedTuple

import msgpack
import numpy as np

from mpcbandit.errors import ProtocolError, printable

__all__ = [
    "VERSION",
    "ALLOWED_DTYPES",
    "OUT_OF_BAND_BYTES",
    "Envelope",
    "Encoder",
    "encode",
    "decode",
    "frames_nbytes",
    "pack_value",
    "unpack_value",
]

VERSION = 3
ALLOWED_DTYPES = frozenset(
    np.dtype(t).str
    for t in ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32",
              "uint64", "int64", "float32", "float64")
)
OUT_OF_BAND_BYTES = 32 * 1024
MAX_NDIM = 32
#: hops travel as a float64: whole numbers are exact below 2**53
_MAX_HOPS = float(2**53)
_INLINE, _OUT_OF_BAND, _BIGINT = 1, 2, 3
#: allowed dtype strings (as sent: 3 ASCII bytes) -> dtype objects
_DTYPES = {s.encode(): np.dtype(s) for s in ALLOWED_DTYPES}
_FRAME_INDEX = struct.Struct("<I")
_SHAPES = [struct.Struct(f"<{n}Q") for n in range(MAX_NDIM + 1)]


class Envelope(NamedTuple):
    """One message: protocol version, session id, per-link sequence number, sender, tag, body,
    the hops of the message chain its sending ends, and when it was sent (emulated networks)."""

    session: str
    seq: int
    sender: str
    tag: str
    body: Any
    v: int = VERSION
    hops: int = 0
    sent: float | None = None


# ---------------------------------------------------------------- encoding


@functools.lru_cache(maxsize=4096)
def _header(dtype: np.dtype, shape: tuple) -> bytes:
    """An array's extension header (protocols send few distinct shapes: cached)."""
    if dtype.str not in ALLOWED_DTYPES:
        raise TypeError(f"array dtype {dtype} is not allowed on the wire")
    if len(shape) > MAX_NDIM:
        raise TypeError(f"array of {len(shape)} dimensions (at most {MAX_NDIM} on the wire)")
    return dtype.str.encode() + bytes((len(shape),)) + _SHAPES[len(shape)].pack(*shape)


def _ext(code: int, data: bytes) -> msgpack.ExtType:
    # ExtType's own constructor re-checks both types in Python on every array sent
    return tuple.__new__(msgpack.ExtType, (code, data))


class Encoder:
    """Envelopes to frames with one reusable msgpack packer: one per channel (not thread-safe)."""

    def __init__(self, out_of_band_bytes: float = OUT_OF_BAND_BYTES):
        self.out_of_band_bytes = out_of_band_bytes
        self._buffers: list = []
        self._packer = msgpack.Packer(default=self._default, use_bin_type=True)

    def encode(self, env: Envelope) -> list:
        """Frames for env: the msgpack envelope, then one buffer per large array."""
        self._buffers = buffers = []
        head = self._packer.pack([env.v, env.session, env.seq, float(env.hops), env.sent,
                                  env.sender, env.tag, env.body])
        return [head, *buffers] if buffers else [head]

    def _default(self, obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            header = _header(obj.dtype, obj.shape)
            if obj.nbytes >= self.out_of_band_bytes:
                arr = obj if obj.flags.c_contiguous else obj.copy(order="C")
                self._buffers.append(memoryview(arr).cast("B"))
                return _ext(_OUT_OF_BAND, header + _FRAME_INDEX.pack(len(self._buffers) - 1))
            return _ext(_INLINE, header + obj.tobytes())
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, int):  # msgpack hands us ints beyond 64 bits
            return _ext(_BIGINT, obj.to_bytes((obj.bit_length() + 8) // 8, "little", signed=True))
        raise TypeError(f"cannot send a {type(obj).__name__} (allowed: None, bool, int, float, "
                        "str, bytes, list, tuple, dict with str keys, numpy arrays)")


def encode(env: Envelope, out_of_band_bytes: float = OUT_OF_BAND_BYTES) -> list:
    """Frames for env: the msgpack envelope, then one buffer per large array."""
    return Encoder(out_of_band_bytes).encode(env)


def frames_nbytes(frames: list) -> int:
    """Bytes a list of frames occupies on the wire (payload only)."""
    if len(frames) == 1:
        return len(frames[0])  # bytes: the common case of one small message
    return sum(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)


# ---------------------------------------------------------------- decoding


class _Reject(Exception):
    """A reason to reject a frame; turned into ProtocolError with peer and tag."""


def _array(data: bytes, inline: bool, buffers: list, used: set, max_bytes: int) -> np.ndarray:
    # every received array passes here: slicing and one dict lookup keep it cheap
    dt = _DTYPES.get(data[:3])
    if dt is None:
        raise _Reject(f"array dtype {data[:3]!r} is not allowed")
    ndim = data[3] if len(data) > 3 else -1
    if not 0 <= ndim <= MAX_NDIM or len(data) < 4 + 8 * ndim:
        raise _Reject(f"array header is not a shape of at most {MAX_NDIM} sizes")
    shape = _SHAPES[ndim].unpack_from(data, 4)
    count = 1
    for n in shape:
        count *= n
    nbytes = count * dt.itemsize
    if nbytes > max_bytes:
        raise _Reject(f"array of {nbytes} bytes exceeds the cap of {max_bytes}")
    start = 4 + 8 * ndim
    if inline:
        sent = len(data) - start
        body, offset = data, start
    else:
        if len(data) != start + 4:
            raise _Reject("array frame index is malformed")
        k = _FRAME_INDEX.unpack_from(data, start)[0]
        if k >= len(buffers) or k in used:
            raise _Reject(f"array frame index {k} is invalid or reused")
        used.add(k)
        body, offset = buffers[k], 0
        sent = len(body)
    if sent != nbytes:
        raise _Reject(f"array shape {list(shape)} x {dt.itemsize} bytes = {nbytes} "
                      f"but {sent} bytes were sent")
    if dt.kind == "b" and count and np.frombuffer(body, np.uint8, count, offset).max() > 1:
        # numpy would keep the stray bits: such a "bool" compares unequal to True
        raise _Reject("bool array holds bytes other than 0 and 1")
    arr = np.frombuffer(body, dt, count, offset)
    if ndim != 1:
        arr = arr.reshape(shape)
    # a zero-copy zmq buffer is writable and ours alone; bytes are not: copy those
    return arr if arr.flags.writeable else arr.copy()


def decode(frames: list, peer: str, tag: str, max_bytes: int) -> Envelope:
    """Decode the frames a peer sent; any malformation raises ProtocolError naming the peer and
    the tag (given, or "?": then read from the envelope if it can be)."""
    try:
        return _decode(frames, peer, tag, max_bytes)
    except ProtocolError as e:
        if e.tag != "?" or not frames:
            raise
        raise ProtocolError(peer, _peek_tag(frames[0], max_bytes), e.reason) from None


def _peek_tag(head: bytes, max_bytes: int) -> str:
    """The tag an envelope claims, or "?" (only on the error path: the message is refused)."""
    try:
        if len(head) <= max_bytes:
            msg = msgpack.unpackb(head, raw=False, strict_map_key=False,
                                  ext_hook=lambda code, data: None)
            if isinstance(msg, list) and len(msg) == 8 and isinstance(msg[6], str):
                return msg[6]
    except Exception:  # noqa: BLE001 - any damage: the tag stays unknown
        pass
    return "?"


def _decode(frames: list, peer: str, tag: str, max_bytes: int) -> Envelope:
    if not frames:
        raise ProtocolError(peer, tag, "empty message")
    head = frames[0]
    buffers = [memoryview(b) for b in frames[1:]] if len(frames) > 1 else []
    total = len(head) + sum(len(b) for b in buffers) if buffers else len(head)
    if total > max_bytes:
        raise ProtocolError(peer, tag, f"message of {total} bytes exceeds the cap of {max_bytes}")
    used: set[int] = set()

    def ext_hook(code: int, data: bytes) -> Any:
        if code == _INLINE or code == _OUT_OF_BAND:
            return _array(data, code == _INLINE, buffers, used, max_bytes)
        if code == _BIGINT:
            return int.from_bytes(data, "little", signed=True)
        raise _Reject(f"unknown extension type {code}")

    try:
        msg = msgpack.unpackb(head, raw=False, strict_map_key=True, use_list=True,
                              ext_hook=ext_hook)
    except _Reject as e:
        raise ProtocolError(peer, tag, str(e)) from None
    except (ValueError, TypeError, struct.error, msgpack.UnpackException) as e:
        raise ProtocolError(peer, tag, f"undecodable frame: {type(e).__name__}: {e}") from None
    if type(msg) is list and len(msg) == 8:
        v, session, seq, hops, sent, sender, mtag, body = msg
        # the common case in one test; the slow path below names what is wrong
        if (type(v) is int and v == VERSION and type(session) is str and type(sender) is str
                and type(mtag) is str and type(seq) is int and 0 <= seq < 2**63
                and type(hops) is float and 0 <= hops < _MAX_HOPS and hops.is_integer()
                and len(used) == len(buffers)
                and (sent is None or (type(sent) is float and math.isfinite(sent)))):
            return Envelope(session, seq, sender, mtag, body, VERSION, int(hops), sent)
    raise ProtocolError(peer, tag, _malformed(msg, len(buffers) - len(used)))


def _malformed(msg: Any, unused: int) -> str:
    """What is wrong with a decoded envelope that failed the common-case test."""
    if type(msg) is not list or len(msg) != 8:
        got = type(msg).__name__
        if isinstance(msg, (list, dict)):
            got = f"{got} of {len(msg)}"
        return f"not an envelope [v, session, seq, hops, sent, sender, tag, body] (got {got})"
    v, session, seq, hops, sent, sender, mtag, _ = msg
    if type(v) is not int or v != VERSION:
        return f"wire version {v!r}, expected {VERSION}"
    for key, value, typ in (("session", session, str), ("sender", sender, str),
                            ("tag", mtag, str), ("seq", seq, int), ("hops", hops, float)):
        if type(value) is not typ:
            return f"envelope field {key!r} is not a {typ.__name__}"
    if not 0 <= seq < 2**63:
        return f"envelope seq {seq} is outside 0 .. 2**63 - 1"
    if not (0 <= hops < _MAX_HOPS and hops.is_integer()):
        return f"envelope hops {hops!r} is not a whole number in 0 .. 2**53 - 1"
    if not (sent is None or (type(sent) is float and math.isfinite(sent))):
        return f"envelope field 'sent' is {printable(repr(sent), 40)}, not a finite float or nil"
    return f"{unused} buffer frame(s) not referenced"


def pack_value(obj: Any, label: str) -> bytes:
    """obj as one self-contained msgpack blob (arrays inline), e.g. for a checkpoint file."""
    return encode(Envelope(session="file", seq=0, sender="", tag=label, body=obj),
                  out_of_band_bytes=float("inf"))[0]


def unpack_value(data: bytes, label: str, max_bytes: int = 2**40) -> Any:
    """Inverse of pack_value; a damaged blob raises ProtocolError naming label."""
    return decode([data], "file", label, max_bytes).body
