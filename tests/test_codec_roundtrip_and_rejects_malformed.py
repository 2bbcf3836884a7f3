"""The wire codec round-trips what protocols send and rejects every malformed frame with a
ProtocolError naming the peer and the tag, never another exception."""

import struct

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpcbandit.errors import ProtocolError
from mpcbandit.net.codec import (
    ALLOWED_DTYPES,
    OUT_OF_BAND_BYTES,
    VERSION,
    Envelope,
    decode,
    encode,
)

CAP = 64 * 2**20


def roundtrip(body):
    frames = encode(Envelope(session="s", seq=3, sender="a.0", tag="mul#0", body=body))
    return decode([bytes(f) for f in frames], "a.0", "mul#0", CAP)


def head(body, v=VERSION, session="s", seq=0, hops=0.0, sent=None) -> bytes:
    """An envelope frame written by hand, as a peer could write it."""
    return msgpack.packb([v, session, seq, hops, sent, "a.0", "t#0", body])


def array(dtype: str, shape, data: bytes = b"", frame: int | None = None) -> msgpack.ExtType:
    """An array extension written by hand: inline data, or a reference to buffer frame."""
    header = dtype.encode() + bytes((len(shape),)) + struct.pack(f"<{len(shape)}q", *shape)
    if frame is None:
        return msgpack.ExtType(1, header + data)
    return msgpack.ExtType(2, header + struct.pack("<I", frame))


def rejected(frames, match=None):
    with pytest.raises(ProtocolError) as e:
        decode(frames, "peer.7", "tag#9", CAP)
    assert e.value.peer == "peer.7" and e.value.tag == "tag#9"
    assert "peer.7" in str(e.value) and "tag#9" in str(e.value)
    if match:
        assert match in str(e.value)


@pytest.mark.parametrize("dtype", sorted(ALLOWED_DTYPES))
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2, 1, 3), (OUT_OF_BAND_BYTES // 8 + 7,)])
def test_every_allowed_dtype_and_shape_roundtrips(dtype, shape):
    rng = np.random.default_rng(0)
    arr = np.asarray(rng.integers(0, 2, size=shape) if np.dtype(dtype).kind == "b"
           else rng.integers(0, 100, size=shape)).astype(dtype)
    assert arr.shape == shape
    env = roundtrip({"x": arr, "nested": [arr, {"y": arr}]})
    for got in (env.body["x"], env.body["nested"][0], env.body["nested"][1]["y"]):
        assert got.dtype == arr.dtype and got.shape == arr.shape
        np.testing.assert_array_equal(got, arr)
        got[...] = got  # received arrays are writable


def test_large_arrays_travel_out_of_band_and_scalars_bigints_and_containers_survive():
    big = np.arange(OUT_OF_BAND_BYTES // 8 + 1, dtype=np.uint64)
    frames = encode(Envelope("s", 0, "a.0", "t#0", [big, big]))
    assert len(frames) == 3  # envelope + one buffer per large array
    body = {"n": None, "b": True, "i": -5, "u": 2**64 - 1, "f": 1.5, "s": "é", "raw": b"\x00\xff",
            "t": (1, 2), "np": np.int64(-3), "big": 2**2047 + 12345, "neg": -(2**100)}
    got = roundtrip(body).body
    assert got == {**body, "t": [1, 2], "np": -3}


def test_envelope_fields_survive():
    env = roundtrip([1])
    assert (env.v, env.session, env.seq, env.sender, env.tag) == (VERSION, "s", 3, "a.0", "mul#0")


def test_unsendable_values_are_refused_at_the_sender():
    with pytest.raises(TypeError):
        encode(Envelope("s", 0, "a", "t", {"x": object()}))
    with pytest.raises(TypeError):
        encode(Envelope("s", 0, "a", "t", np.array(["text"])))


def valid_frames():
    return [bytes(f) for f in encode(Envelope("s", 0, "a.0", "t#0", {"x": np.arange(4)}))]


@given(cut=st.integers(min_value=0, max_value=200))
@settings(max_examples=60, deadline=None)
def test_truncated_frames_are_rejected(cut):
    full = valid_frames()[0]
    cut = cut % len(full)
    rejected([full[:cut]])


@given(extra=st.binary(min_size=1, max_size=20))
@settings(max_examples=40, deadline=None)
def test_trailing_bytes_are_rejected(extra):
    rejected([valid_frames()[0] + extra])


@given(data=st.binary(max_size=300))
@settings(max_examples=300, deadline=None)
def test_random_bytes_never_crash(data):
    try:
        decode([data], "peer.7", "tag#9", CAP)
    except ProtocolError as e:
        assert e.peer == "peer.7"


@given(data=st.binary(min_size=1, max_size=60), pos=st.integers(min_value=0))
@settings(max_examples=300, deadline=None)
def test_corrupted_valid_frames_never_crash(data, pos):
    frame = bytearray(valid_frames()[0])
    pos %= len(frame)
    frame[pos:pos + len(data)] = data
    try:
        decode([bytes(frame)], "peer.7", "tag#9", CAP)
    except ProtocolError as e:
        assert e.tag == "tag#9"


def test_unknown_ext_types_are_rejected():
    rejected([head(msgpack.ExtType(5, b"abc"))], "extension type 5")


def test_wrong_dtype_is_rejected():
    rejected([head(array("|O8", [1], b"\0" * 8))], "dtype")
    rejected([head(array("<U4", [1], b"\0" * 16))], "dtype")


def test_shape_times_itemsize_must_equal_length():
    rejected([head(array("<i8", [3], b"\0" * 16))], "24")
    rejected([head(array("<i8", [-1]))], "cap")  # read as 2**64 - 1 elements
    rejected([head(array("<i8", [2, 2], frame=0)), b"\0" * 8], "32")
    rejected([head(array("<i8", [1], frame=1)), b"\0" * 8], "frame index 1")
    rejected([head([array("<i8", [1], frame=0), array("<i8", [1], frame=0)]), b"\0" * 8], "reused")
    rejected([head(msgpack.ExtType(1, b"<i8"))], "header")
    rejected([head(msgpack.ExtType(1, b"<i8\x02" + b"\0" * 8))], "header")
    rejected([head(msgpack.ExtType(1, b"<i8\x21"))], "header")  # 33 dimensions


def test_oversize_is_rejected_before_allocation():
    rejected([head(array("<i8", [2**40]))], "cap")
    with pytest.raises(ProtocolError, match="cap"):
        decode([b"\0" * 100], "p", "t", max_bytes=50)


def test_non_string_keys_are_rejected():
    rejected([head({1: 2})], "undecodable")


def test_deep_nesting_is_rejected():
    deep = head(0)[:-1] + b"\x91" * 5000 + b"\xc0"
    rejected([deep])


def test_envelope_shape_is_checked():
    rejected([msgpack.packb([1, 2, 3])], "envelope")
    rejected([msgpack.packb({"v": VERSION, "session": "s"})], "envelope")
    rejected([head(0, v=1)], "version")  # an earlier wire form
    rejected([head(0, v=array("<i8", (2,), (2).to_bytes(8, "little") * 2))], "version")
    rejected([head(0, v=True)], "version")
    rejected([head(0, session=5)], "session")
    rejected([valid_frames()[0], b"unreferenced buffer"], "not referenced")
    rejected([], "empty")


def test_sequence_numbers_outside_63_bits_are_rejected():
    for seq in (msgpack.ExtType(3, (2**80).to_bytes(11, "little", signed=True)), -1, 2**63):
        rejected([head(0, seq=seq)], "seq")


def test_hop_counts_and_send_times_travel_and_are_checked():
    env = decode(encode(Envelope("s", 0, "a.0", "t#0", 1, hops=41, sent=12.5)), "a.0", "t#0", CAP)
    assert (env.hops, env.sent) == (41, 12.5)
    assert decode(encode(Envelope("s", 0, "a.0", "t#0", 1)), "a.0", "t#0", CAP).sent is None
    for hops in (-1.0, 2.0**53, 1.5, float("nan"), 3, "3", None):
        rejected([head(0, hops=hops)], "hops")
    # every message takes the same bytes whatever its hop count: sizes never depend on timing
    sizes = {len(encode(Envelope("s", 0, "a.0", "t#0", 1, hops=h))[0]) for h in (0, 200, 70000, 2**40)}
    assert len(sizes) == 1
    for sent in (float("nan"), float("inf"), 3, "now"):
        rejected([head(0, sent=sent)], "sent")


def test_bool_arrays_must_hold_only_zero_and_one():
    ok = decode([head(array("|b1", [3], b"\0\1\0"))], "p", "t", CAP)
    assert ok.body.tolist() == [False, True, False]
    rejected([head(array("|b1", [3], b"\0\2\1"))], "0 and 1")
