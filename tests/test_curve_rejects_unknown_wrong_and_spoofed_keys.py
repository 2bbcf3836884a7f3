"""CurveZMQ on live sockets: peers are named by their key, and every bad key, spoofed
identity, unsafe secret file or malformed frame ends in an error naming the culprit."""

import os
import threading
from dataclasses import dataclass

import numpy as np
import pytest
import zmq
from hypothesis import given, settings
from hypothesis import strategies as st

from deadlines import deadline
from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import Channel
from mpcbandit.net.codec import Envelope, encode
from mpcbandit.net.security import (CurveSetup, SecurityError, check_refuses_unknown_keys,
                                    load_curve, write_keys)
from mpcbandit.net.zmq_link import ZmqLink

# one worker runs the module, so its module fixture runs once
pytestmark = pytest.mark.xdist_group("curve-plain-pair")


@dataclass
class P:
    role: str
    index: int
    address: str

    @property
    def name(self):
        return f"{self.role}.{self.index}"


@pytest.fixture
def net(tmp_path):
    base = pick_base_port("127.0.0.1", 3)
    parties = [P(r, 0, f"tcp://127.0.0.1:{base + i}") for i, r in enumerate("abc")]
    write_keys(tmp_path, parties)
    return tmp_path, {p.name: p.address for p in parties}


def link(keys, addr, me, peers, curve=None, timeout=None):
    curve = curve or load_curve(str(keys), me, peers)
    return ZmqLink(me, addr[me], {p: addr[p] for p in peers}, max_bytes=2**20, linger_s=0.5,
                   curve=curve)


def in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    return t, out


def test_known_peers_talk_and_are_named_by_their_key(net):
    keys, addr = net

    def b():
        lb = link(keys, addr, "b.0", ["a.0"])
        try:
            lb.hello(deadline(5))
            ch = Channel("b.0", ["a.0"], lb, session="s", deadline_s=deadline(5),
                         max_bytes=2**20)
            ch.send("x", "a.0", np.arange(3))
        finally:
            lb.close()

    t, out = in_thread(b)
    la = link(keys, addr, "a.0", ["b.0"])
    try:
        la.hello(deadline(5))
        ch = Channel("a.0", ["b.0"], la, session="s", deadline_s=deadline(5), max_bytes=2**20)
        assert list(ch.recv("x", "b.0")) == [0, 1, 2]
    finally:
        la.close()
    t.join(deadline(10))
    assert "error" not in out


def test_unknown_client_key_is_refused_and_named(net):
    keys, addr = net
    la = link(keys, addr, "a.0", ["b.0"])
    ctx = zmq.Context()
    pub, sec = zmq.curve_keypair()
    mallory = ctx.socket(zmq.DEALER)
    mallory.setsockopt(zmq.LINGER, 0)
    mallory.setsockopt(zmq.ROUTING_ID, b"b.0")  # claims to be b
    mallory.curve_publickey, mallory.curve_secretkey = pub, sec
    mallory.curve_serverkey = load_curve(str(keys), "a.0", ["b.0"]).roster.keys["a.0"]
    mallory.connect(addr["a.0"])
    mallory.send_multipart([b"", b"hello"])
    try:
        with pytest.raises(PeerTimeout) as e:
            la.hello(deadline(1.0))   # long enough for mallory's hello to come
        assert e.value.peer == "b.0"
        assert "unknown CURVE key" in str(e.value) and pub.decode() in str(e.value)
    finally:
        la.close()
        mallory.close()
        ctx.term()


def test_wrong_server_key_pinned_means_the_peer_never_gets_through(net):
    keys, addr = net
    good = load_curve(str(keys), "b.0", ["a.0"])
    wrong = dict(good.roster.keys, **{"a.0": good.roster.keys["c.0"]})  # pins c's key for a
    bad = CurveSetup("b.0", good.keypair, type(good.roster)(wrong))
    lb = link(keys, addr, "b.0", ["a.0"], curve=bad)
    la = link(keys, addr, "a.0", ["b.0"])
    try:
        with pytest.raises(PeerTimeout) as e:
            la.hello(1.0)
        assert e.value.peer == "b.0"
    finally:
        la.close()
        lb.close()


def test_role_spoofing_with_a_valid_key_is_rejected(net):
    keys, addr = net
    la = link(keys, addr, "a.0", ["b.0", "c.0"])
    c = load_curve(str(keys), "c.0", ["a.0"])
    ctx = zmq.Context()
    spoof = ctx.socket(zmq.DEALER)
    spoof.setsockopt(zmq.LINGER, 0)
    spoof.setsockopt(zmq.ROUTING_ID, b"b.0")  # c's valid key, b's routing id
    spoof.curve_publickey, spoof.curve_secretkey = c.keypair.public, c.keypair.secret
    spoof.curve_serverkey = c.roster.keys["a.0"]
    spoof.connect(addr["a.0"])
    frames = encode(Envelope("s", 0, "b.0", "x#0", 1))
    spoof.send_multipart(frames)
    try:
        ch = Channel("a.0", ["b.0", "c.0"], la, session="s", deadline_s=deadline(3),
                     max_bytes=2**20)
        with pytest.raises(ProtocolError) as e:
            ch.recv("x", "b.0")
        assert e.value.peer == "c.0" and "routing id 'b.0'" in str(e.value)
    finally:
        la.close()
        spoof.close()
        ctx.term()


def test_envelope_claiming_another_sender_is_rejected(net):
    keys, addr = net
    la = link(keys, addr, "a.0", ["b.0", "c.0"])
    lc = link(keys, addr, "c.0", ["a.0"])
    try:
        lc.send("a.0", encode(Envelope("s", 0, "b.0", "x#0", 1)))
        ch = Channel("a.0", ["b.0", "c.0"], la, session="s", deadline_s=deadline(3),
                     max_bytes=2**20)
        with pytest.raises(ProtocolError, match="claims sender 'b.0'") as e:
            ch.recv("x", "b.0")
        assert e.value.peer == "c.0"
    finally:
        la.close()
        lc.close()


def test_secret_key_readable_by_others_is_refused_with_the_fix(net):
    keys, _ = net
    path = keys / "a.0.key_secret"
    assert (os.stat(path).st_mode & 0o777) == 0o600
    os.chmod(path, 0o644)
    with pytest.raises(SecurityError, match="chmod 600"):
        load_curve(str(keys), "a.0", ["b.0"])


def test_self_check_aborts_when_the_authenticator_fails_open():
    # a CURVE server with no authenticator accepts any key: the check must refuse to go on
    ctx = zmq.Context()
    pub, sec = zmq.curve_keypair()
    server = ctx.socket(zmq.ROUTER)
    server.curve_server, server.curve_publickey, server.curve_secretkey = True, pub, sec
    port = server.bind_to_random_port("tcp://127.0.0.1")
    try:
        with pytest.raises(SecurityError, match="accepted"):
            check_refuses_unknown_keys(ctx, f"tcp://127.0.0.1:{port}", pub)
    finally:
        server.close(0)
        ctx.term()


@pytest.fixture(scope="module")
def plain_pair():
    base = pick_base_port("127.0.0.1", 1)
    addr = f"tcp://127.0.0.1:{base}"
    la = ZmqLink("a.0", addr, {}, max_bytes=2**20, linger_s=0.1)
    ctx = zmq.Context()
    fuzzer = ctx.socket(zmq.DEALER)
    fuzzer.setsockopt(zmq.LINGER, 0)
    fuzzer.setsockopt(zmq.ROUTING_ID, b"b.0")
    fuzzer.connect(addr)
    yield la, fuzzer
    la.close()
    fuzzer.close()
    ctx.term()


@given(frames=st.lists(st.binary(max_size=64), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None)
def test_fuzzed_frames_on_a_live_socket_end_in_a_named_error(plain_pair, frames):
    la, fuzzer = plain_pair
    ch = Channel("a.0", ["b.0"], la, session="s", deadline_s=0.3, max_bytes=2**20)
    fuzzer.send_multipart(frames)
    with pytest.raises((ProtocolError, PeerTimeout)) as e:
        ch.recv("x", "b.0")
    assert e.value.peer == "b.0"


def test_frame_above_the_cap_is_a_named_protocol_error(plain_pair):
    la, fuzzer = plain_pair
    ch = Channel("a.0", ["b.0"], la, session="s", deadline_s=deadline(2), max_bytes=2**20)
    big = np.zeros(3 * 2**18 + 10, dtype=np.uint8)  # 768 KiB + ...: under zmq's limit
    frames = encode(Envelope("s", 0, "b.0", "x#0", [big, big]))  # 1.5 MiB > cap of 1 MiB
    fuzzer.send_multipart(frames)
    with pytest.raises(ProtocolError, match="exceeds the cap") as e:
        ch.recv("x", "b.0")
    assert e.value.peer == "b.0" and e.value.tag == "x#0"


def test_hello_timeout_with_many_refused_keys_gives_the_count_and_the_first_few(net):
    keys, addr = net
    la = link(keys, addr, "a.0", ["b.0"])
    ctx = zmq.Context()
    server_key = load_curve(str(keys), "a.0", ["b.0"]).roster.keys["a.0"]
    strangers = []
    for _ in range(12):
        pub, sec = zmq.curve_keypair()
        s = ctx.socket(zmq.DEALER)
        s.setsockopt(zmq.LINGER, 0)
        s.curve_publickey, s.curve_secretkey, s.curve_serverkey = pub, sec, server_key
        s.connect(addr["a.0"])
        s.send_multipart([b"", b"hello"])
        strangers.append((s, pub.decode()))
    try:
        with pytest.raises(PeerTimeout) as e:
            la.hello(deadline(1.5))   # long enough for the twelve hellos to come
        text = str(e.value)
        assert "refused 12 connection(s) with unknown CURVE key(s)" in text
        assert sum(pub in text for _, pub in strangers) == 3 and "and 9 more" in text
        assert len(text) < 500
    finally:
        la.close()
        for s, _ in strangers:
            s.close()
        ctx.term()
