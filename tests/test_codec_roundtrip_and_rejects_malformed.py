"""The wire codec round-trips what protocols send and rejects every malformed frame with a
ProtocolError naming the peer and the tag, never another exception."""

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpcbandit.errors import ProtocolError
from mpcbandit.net.codec import ALLOWED_DTYPES, OUT_OF_BAND_BYTES, Envelope, decode, encode

CAP = 64 * 2**20


def roundtrip(body):
    frames = encode(Envelope(session="s", seq=3, sender="a.0", tag="mul#0", body=body))
    return decode([bytes(f) for f in frames], "a.0", "mul#0", CAP)


def head(body) -> bytes:
    return msgpack.packb({"v": 1, "session": "s", "seq": 0, "sender": "a.0", "tag": "t#0",
                          "body": body})


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
    assert (env.v, env.session, env.seq, env.sender, env.tag) == (1, "s", 3, "a.0", "mul#0")


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


def test_ext_types_are_rejected():
    rejected([head(msgpack.ExtType(5, b"abc"))], "undecodable")


def test_wrong_dtype_is_rejected():
    rejected([head({"__nd__": 1, "dtype": "|O", "shape": [1], "bytes": b"\0" * 8})], "dtype")
    rejected([head({"__nd__": 1, "dtype": "<U4", "shape": [1], "bytes": b"\0" * 16})], "dtype")


def test_shape_times_itemsize_must_equal_length():
    rejected([head({"__nd__": 1, "dtype": "<i8", "shape": [3], "bytes": b"\0" * 16})], "24")
    rejected([head({"__nd__": 1, "dtype": "<i8", "shape": [-1], "bytes": b""})], "shape")
    rejected([head({"__nd__": 1, "dtype": "<i8", "shape": [2, 2], "frame": 0}), b"\0" * 8])


def test_oversize_is_rejected_before_allocation():
    rejected([head({"__nd__": 1, "dtype": "<i8", "shape": [2**40], "bytes": b""})], "cap")
    with pytest.raises(ProtocolError, match="cap"):
        decode([b"\0" * 100], "p", "t", max_bytes=50)


def test_non_string_keys_are_rejected():
    frame = msgpack.packb({"v": 1, "session": "s", "seq": 0, "sender": "a", "tag": "t",
                           "body": {1: 2}})
    rejected([frame], "undecodable")


def test_deep_nesting_is_rejected():
    frame = msgpack.packb({"v": 1, "session": "s", "seq": 0, "sender": "a", "tag": "t",
                           "body": 0})
    deep = frame[:-1] + b"\x91" * 5000 + b"\xc0"
    rejected([deep])


def test_envelope_shape_is_checked():
    rejected([msgpack.packb([1, 2, 3])], "envelope")
    rejected([msgpack.packb({"v": 1, "session": "s"})], "envelope")
    rejected([msgpack.packb({"v": 2, "session": "s", "seq": 0, "sender": "a", "tag": "t",
                             "body": 0})], "version")
    rejected([msgpack.packb({"v": 1, "session": 5, "seq": 0, "sender": "a", "tag": "t",
                             "body": 0})], "session")
    rejected([valid_frames()[0], b"unreferenced buffer"], "not referenced")
    rejected([], "empty")


def test_sequence_numbers_outside_63_bits_are_rejected():
    for seq in ({"__bigint__": (2**80).to_bytes(11, "little", signed=True)}, -1, 2**63):
        frame = msgpack.packb({"v": 1, "session": "s", "seq": seq, "sender": "a", "tag": "t",
                               "body": 0})
        rejected([frame], "seq")


def test_bool_arrays_must_hold_only_zero_and_one():
    ok = decode([head({"__nd__": 1, "dtype": "|b1", "shape": [3], "bytes": b"\0\1\0"})], "p", "t", CAP)
    assert ok.body.tolist() == [False, True, False]
    rejected([head({"__nd__": 1, "dtype": "|b1", "shape": [3], "bytes": b"\0\2\1"})], "0 and 1")
