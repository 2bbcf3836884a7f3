"""Wire codec: msgpack envelopes with numpy arrays, never pickle.

A message is the frames ``[envelope, *buffers]``; the envelope is the msgpack map
``{v, session, seq, sender, tag, body}``. Inside ``body`` a numpy array is the map
``{"__nd__": 1, "dtype", "shape", "bytes"}``; an array of at least ``OUT_OF_BAND_BYTES``
carries ``"frame": k`` instead of ``"bytes"`` and travels as buffer frame k, so large arrays
are sent without copying. Integers beyond 64 bits (Paillier ciphertexts) are
``{"__bigint__": bytes}``. Decoding checks everything a peer could get wrong and raises
ProtocolError naming the peer and the tag.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgpack
import numpy as np

from mpcbandit.errors import ProtocolError

__all__ = [
    "VERSION",
    "ALLOWED_DTYPES",
    "OUT_OF_BAND_BYTES",
    "Envelope",
    "encode",
    "decode",
    "frames_nbytes",
    "pack_value",
    "unpack_value",
]

VERSION = 1
ALLOWED_DTYPES = frozenset(
    np.dtype(t).str
    for t in ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32",
              "uint64", "int64", "float32", "float64")
)
OUT_OF_BAND_BYTES = 32 * 1024
MAX_NDIM = 32
_ENVELOPE_KEYS = frozenset(("v", "session", "seq", "sender", "tag", "body"))
#: allowed dtype strings -> dtype objects (looked up per received array)
_DTYPES = {s: np.dtype(s) for s in ALLOWED_DTYPES}


class Envelope(NamedTuple):
    """One message: protocol version, session id, per-link sequence number, sender, tag, body."""

    session: str
    seq: int
    sender: str
    tag: str
    body: Any
    v: int = VERSION


# ---------------------------------------------------------------- encoding


def _bigint(value: int) -> dict:
    return {"__bigint__": value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)}


def encode(env: Envelope, out_of_band_bytes: float = OUT_OF_BAND_BYTES) -> list:
    """Frames for env: the msgpack envelope, then one buffer per large array."""
    buffers: list = []

    def default(obj: Any) -> Any:
        if isinstance(obj, np.ndarray):
            dtype = obj.dtype.str
            if dtype not in ALLOWED_DTYPES:
                raise TypeError(f"array dtype {obj.dtype} is not allowed on the wire")
            arr = obj if obj.flags.c_contiguous else obj.copy(order="C")
            if arr.nbytes >= out_of_band_bytes:
                buffers.append(memoryview(arr).cast("B"))
                return {"__nd__": 1, "dtype": dtype, "shape": list(arr.shape),
                        "frame": len(buffers) - 1}
            return {"__nd__": 1, "dtype": dtype, "shape": list(arr.shape), "bytes": arr.tobytes()}
        if isinstance(obj, np.generic):
            return obj.item()
        if isinstance(obj, int):  # msgpack hands us ints beyond 64 bits
            return _bigint(obj)
        raise TypeError(f"cannot send a {type(obj).__name__} (allowed: None, bool, int, float, "
                        "str, bytes, list, tuple, dict with str keys, numpy arrays)")

    msg = {"v": env.v, "session": env.session, "seq": env.seq, "sender": env.sender,
           "tag": env.tag, "body": env.body}
    head = msgpack.packb(msg, default=default, use_bin_type=True)
    return [head, *buffers]


def frames_nbytes(frames: list) -> int:
    """Bytes a list of frames occupies on the wire (payload only)."""
    if len(frames) == 1:
        return len(frames[0])  # bytes: the common case of one small message
    return sum(f.nbytes if isinstance(f, memoryview) else len(f) for f in frames)


# ---------------------------------------------------------------- decoding


class _Reject(Exception):
    """A reason to reject a frame; turned into ProtocolError with peer and tag."""


def _array(obj: dict, buffers: list, used: set, max_bytes: int) -> np.ndarray:
    # every received array passes here: plain type() tests and one dict lookup keep it cheap
    if len(obj) != 4 or "dtype" not in obj or "shape" not in obj or ("bytes" in obj) == ("frame" in obj):
        raise _Reject(f"array map has keys {sorted(obj)}")
    dtype, shape = obj["dtype"], obj["shape"]
    dt = _DTYPES.get(dtype) if type(dtype) is str else None
    if dt is None:
        raise _Reject(f"array dtype {dtype!r} is not allowed")
    if type(shape) is not list or len(shape) > MAX_NDIM:
        raise _Reject(f"array shape {shape!r} is not a list of at most {MAX_NDIM} sizes")
    count = 1
    for n in shape:
        if type(n) is not int or n < 0:
            raise _Reject(f"array shape {shape!r} is not a list of at most {MAX_NDIM} sizes")
        count *= n
    nbytes = count * dt.itemsize
    if nbytes > max_bytes:
        raise _Reject(f"array of {nbytes} bytes exceeds the cap of {max_bytes}")
    data = obj.get("bytes")
    if data is not None or "bytes" in obj:
        if type(data) is not bytes:
            raise _Reject("array bytes are not a bin")
    else:
        k = obj["frame"]
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k < len(buffers) or k in used:
            raise _Reject(f"array frame index {k!r} is invalid or reused")
        used.add(k)
        data = buffers[k]
    if len(data) != nbytes:
        raise _Reject(f"array shape {shape} x {dt.itemsize} bytes = {nbytes} "
                      f"but {len(data)} bytes were sent")
    if dt == np.bool_ and count and np.frombuffer(data, dtype=np.uint8).max() > 1:
        # numpy would keep the stray bits: such a "bool" compares unequal to True
        raise _Reject("bool array holds bytes other than 0 and 1")
    arr = np.frombuffer(data, dtype=dt).reshape(shape)
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
            msg = msgpack.unpackb(head, raw=False, strict_map_key=False, max_ext_len=0)
            if isinstance(msg, dict) and isinstance(msg.get("tag"), str):
                return msg["tag"]
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
    hook = None
    # without an array or a big integer in it, the hook would change nothing: skip the calls
    if b"__nd__" in head or b"__bigint__" in head:
        def hook(obj: dict) -> Any:
            if "__nd__" in obj:
                return _array(obj, buffers, used, max_bytes)
            if "__bigint__" in obj:
                data = obj["__bigint__"]
                if len(obj) != 1 or not isinstance(data, bytes):
                    raise _Reject("malformed big integer")
                return int.from_bytes(data, "little", signed=True)
            return obj

    try:
        msg = msgpack.unpackb(head, raw=False, strict_map_key=True, max_ext_len=0,
                              use_list=True, object_hook=hook)
    except _Reject as e:
        raise ProtocolError(peer, tag, str(e)) from None
    except (ValueError, TypeError, msgpack.UnpackException) as e:
        raise ProtocolError(peer, tag, f"undecodable frame: {type(e).__name__}: {e}") from None
    if not isinstance(msg, dict) or msg.keys() != _ENVELOPE_KEYS:
        keys = sorted(msg) if isinstance(msg, dict) else type(msg).__name__
        raise ProtocolError(peer, tag, f"not an envelope (got {keys})")
    if msg["v"] != VERSION:
        raise ProtocolError(peer, tag, f"wire version {msg['v']!r}, expected {VERSION}")
    session, seq, sender, mtag = msg["session"], msg["seq"], msg["sender"], msg["tag"]
    for key, value, typ in (("session", session, str), ("sender", sender, str),
                            ("tag", mtag, str), ("seq", seq, int)):
        if type(value) is not typ:
            raise ProtocolError(peer, tag, f"envelope field {key!r} is not a {typ.__name__}")
    if not 0 <= seq < 2**63:
        raise ProtocolError(peer, tag, f"envelope seq {seq} is outside 0 .. 2**63 - 1")
    if len(used) != len(buffers):
        raise ProtocolError(peer, tag, f"{len(buffers) - len(used)} buffer frame(s) not referenced")
    return Envelope(session, seq, sender, mtag, msg["body"], VERSION)


def pack_value(obj: Any, label: str) -> bytes:
    """obj as one self-contained msgpack blob (arrays inline), e.g. for a checkpoint file."""
    return encode(Envelope(session="file", seq=0, sender="", tag=label, body=obj),
                  out_of_band_bytes=float("inf"))[0]


def unpack_value(data: bytes, label: str, max_bytes: int = 2**40) -> Any:
    """Inverse of pack_value; a damaged blob raises ProtocolError naming label."""
    return decode([data], "file", label, max_bytes).body
