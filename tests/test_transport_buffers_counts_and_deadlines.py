"""Channel behaviour over the in-process link and over real ZeroMQ sockets."""

import threading
import time

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import Channel
from mpcbandit.net.codec import Envelope, decode, encode
from mpcbandit.net.inproc import InprocHub, run_inproc
from mpcbandit.net.netspec import NetSpec
from mpcbandit.net.zmq_link import QUEUE_MESSAGES, ZERO_COPY_BYTES, ZmqLink


def test_out_of_order_messages_are_kept_until_asked_for():
    def a(chan):
        chan.send("x", "b", 1)
        chan.send("y", "b", 2)
        chan.send("x", "b", 3)

    def b(chan):
        time.sleep(0.05)  # everything has arrived; ask in another order
        return [chan.recv("y", "a"), chan.recv("x", "a"), chan.recv("x", "a")]

    results, _ = run_inproc({"a": a, "b": b})
    assert results["b"] == [2, 1, 3]


def test_an_array_sent_without_a_copy_becomes_read_only_in_process_too():
    hub = InprocHub(["a", "b"])
    chan = Channel("a", ["b"], hub.link("a"), session="s", deadline_s=deadline(1),
                   max_bytes=2**24)
    big = np.arange(ZERO_COPY_BYTES // 8, dtype=np.int64)   # leaves ZeroMQ uncopied
    small = np.arange(ZERO_COPY_BYTES // 8 - 1, dtype=np.int64)  # copied
    chan.send("x", "b", {"big": big, "small": small})
    small[0] = 5
    with pytest.raises(ValueError, match="read-only"):
        big[0] = 5
    b = Channel("b", ["a"], hub.link("b"), session="s", deadline_s=deadline(1),
                max_bytes=2**24)
    got = b.recv("x", "a")
    assert got["small"][0] == 0 and got["big"].sum() == big.sum()


def test_tags_are_label_and_per_link_count():
    hub = InprocHub(["a", "b"])
    chan = Channel("a", ["b"], hub.link("a"), session="s", deadline_s=deadline(1),
                   max_bytes=2**20)
    chan.send("mul", "b", 0)
    chan.send("mul", "b", 0)
    chan.send("lt", "b", 0)
    tags = [decode(hub.queues["b"].get_nowait()[1], "a", "?", 2**20).tag for _ in range(3)]
    assert tags == ["mul#0", "mul#1", "lt#0"]


def test_deadline_error_names_the_silent_peer_and_the_tag():
    def a(chan):
        chan.recv("open", "b")

    def b(chan):
        return None

    with pytest.raises(PeerTimeout) as e:
        run_inproc({"a": a, "b": b}, deadline_s=0.2)
    assert e.value.peer == "b" and e.value.tag == "open#0"
    assert "'b'" in str(e.value) and "open#0" in str(e.value)


def test_each_exchange_is_one_round_and_bytes_are_counted_on_both_sides():
    x = np.arange(100, dtype=np.uint64)

    def party(me, other):
        def fn(chan):
            chan.exchange("mul", send={other: x}, recv=[other])        # 1 round, merged
            chan.exchange("mul", send={other: x}, recv=[other])
            chan.exchange("lt", send={other: [x, x]}, recv=[other])
            return chan.stats
        return fn

    results, _ = run_inproc({"a": party("a", "b"), "b": party("b", "a")})
    for st in results.values():
        assert st.op("mul").rounds == 2 and st.op("lt").rounds == 1
        assert st.op("mul").messages == 2
        assert st.op("mul").bytes_sent == st.op("mul").bytes_received > 2 * 800
        assert st.total().rounds == 3
    assert results["a"].op("lt").bytes_sent == results["b"].op("lt").bytes_received


def test_receive_any_takes_whichever_sender_is_first():
    def server(chan):
        got = [chan.receive_any("req", ["c1", "c2"]) for _ in range(4)]
        return sorted(got)

    def client(name):
        def fn(chan):
            chan.send("req", "s", name + "-1")
            chan.send("req", "s", name + "-2")
        return fn

    results, _ = run_inproc({"s": server, "c1": client("c1"), "c2": client("c2")},
                            peers={"s": ["c1", "c2"], "c1": ["s"], "c2": ["s"]})
    assert results["s"] == [("c1", "c1-1"), ("c1", "c1-2"), ("c2", "c2-1"), ("c2", "c2-2")]


def test_latency_emulation_holds_delivery_for_delay_plus_size_over_bandwidth():
    net = NetSpec("test", one_way_s=0.03, bytes_per_s=1e6)
    payload = np.zeros(20_000, dtype=np.uint8)  # 20 KB at 1 MB/s = 20 ms

    def a(chan):
        for _ in range(3):
            chan.exchange("ping", send={"b": payload}, recv=["b"])
        return chan.stats.op("ping").wait_s

    def b(chan):
        for _ in range(3):
            chan.exchange("ping", send={"a": payload}, recv=["a"])

    results, _ = run_inproc({"a": a, "b": b}, net=net)
    assert results["a"] >= 3 * (0.03 + 0.02) * 0.95


def _channel_pair(hub):
    return (Channel("a", ["b"], hub.link("a"), session="s1", deadline_s=0.3, max_bytes=2**20),
            Channel("b", ["a"], hub.link("b"), session="s1", deadline_s=0.3, max_bytes=2**20))


def test_duplicate_messages_are_dropped():
    hub = InprocHub(["a", "b"])
    a, b = _channel_pair(hub)
    a.send("x", "b", 7)
    item = hub.queues["b"].get_nowait()
    hub.queues["b"].put(item)
    hub.queues["b"].put(item)  # replay of the same sequence number
    assert b.recv("x", "a") == 7
    with pytest.raises(PeerTimeout):
        b.recv("x", "a")
    assert b.duplicates_dropped == 1


@pytest.mark.parametrize("field,value,match", [
    ("session", "other-run", "session"),
    ("sender", "c", "claims sender"),
    ("tag", 5, "'tag' is not a str"),
])
def test_foreign_session_spoofed_sender_and_malformed_tag_are_rejected(field, value, match):
    hub = InprocHub(["a", "b"])
    _, b = _channel_pair(hub)
    env = dict(session="s1", seq=0, sender="a", tag="x#0", body=1)
    env[field] = value
    hub.link("a").send("b", encode(Envelope(**env)))
    with pytest.raises(ProtocolError, match=match) as e:
        b.recv("x", "a")
    assert e.value.peer == "a"


def test_unknown_sender_is_rejected():
    hub = InprocHub(["a", "b", "mallory"])
    _, b = _channel_pair(hub)
    hub.link("mallory").send("b", encode(Envelope("s1", 0, "mallory", "x#0", 1)))
    with pytest.raises(ProtocolError, match="unknown sender") as e:
        b.recv("x", "a")
    assert e.value.peer == "mallory"


def test_zmq_links_exchange_out_of_order_and_late_peer():
    base = pick_base_port("127.0.0.1", 2)
    addr = {"a": f"tcp://127.0.0.1:{base}", "b": f"tcp://127.0.0.1:{base + 1}"}
    out = {}

    def party(me, other, delay):
        time.sleep(delay)
        link = ZmqLink(me, addr[me], {other: addr[other]}, max_bytes=2**24, linger_s=1)
        chan = Channel(me, [other], link, session="z", deadline_s=deadline(5), max_bytes=2**24)
        try:
            link.hello(deadline(5))
            big = np.arange(200_000, dtype=np.int64)  # out-of-band frame, sent zero-copy
            mid = np.arange(8_000, dtype=np.int64)  # out-of-band frame, copied when sent
            chan.send("p", other, {"me": me, "big": big, "mid": mid})
            mid[:] = -1  # the copy left with the message
            with pytest.raises(ValueError, match="read-only"):
                big[0] = -1  # its bytes may still be queued: a write raises, not corrupts
            chan.send("q", other, me)
            q = chan.recv("q", other)
            p = chan.recv("p", other)
            p["mid"] += 1  # received arrays are the receiver's to write
            out[me] = (p["me"], q, int(p["big"].sum()), int(p["mid"].sum()),
                       chan.stats.total().rounds)
        finally:
            chan.close()

    ts = [threading.Thread(target=party, args=("a", "b", 0.0)),
          threading.Thread(target=party, args=("b", "a", 0.5))]  # b starts late
    for t in ts:
        t.start()
    for t in ts:
        t.join(deadline(20))
    s, m = int(np.arange(200_000).sum()), int(np.arange(1, 8_001).sum())
    assert out == {"a": ("b", "b", s, m, 4), "b": ("a", "a", s, m, 4)}


def test_zmq_hello_names_the_missing_peer():
    base = pick_base_port("127.0.0.1", 2)
    link = ZmqLink("a", f"tcp://127.0.0.1:{base}", {"b": f"tcp://127.0.0.1:{base + 1}"},
                   max_bytes=2**20)
    try:
        with pytest.raises(PeerTimeout, match="'b'.*hello"):
            link.hello(0.3)
    finally:
        link.close()


def test_very_long_deadlines_do_not_overflow_the_socket_timeout():
    base = pick_base_port("127.0.0.1", 2)
    addr = {"a": f"tcp://127.0.0.1:{base}", "b": f"tcp://127.0.0.1:{base + 1}"}
    a = ZmqLink("a", addr["a"], {"b": addr["b"]}, max_bytes=2**20)
    b = ZmqLink("b", addr["b"], {"a": addr["a"]}, max_bytes=2**20)
    try:
        a.send("b", encode(Envelope("s", 0, "a", "x#0", 1)))
        got = b.poll(10**9)  # a ~31-year deadline: more ms than a C int holds
        assert got is not None and got[0] == "a" and decode(got[1], "a", "?", 2**20).tag == "x#0"
    finally:
        a.close()
        b.close()


def _kernel_buffered_bytes() -> int:
    """The most a loopback TCP connection may hold in the kernel: its send and receive buffers
    at their autotuning maxima (Linux; 4 MiB each where /proc does not say)."""
    total = 0
    for name in ("tcp_wmem", "tcp_rmem"):
        try:
            with open(f"/proc/sys/net/ipv4/{name}") as f:
                total += int(f.read().split()[2])
        except (OSError, IndexError, ValueError):
            total += 4 << 20
    return total


def test_a_sender_far_ahead_of_its_reader_waits_with_a_deadline():
    base = pick_base_port("127.0.0.1", 2)
    addr = {"a": f"tcp://127.0.0.1:{base}", "b": f"tcp://127.0.0.1:{base + 1}"}
    b = ZmqLink("b", addr["b"], {}, max_bytes=2**20)  # bound, never reads
    a = ZmqLink("a", addr["a"], {"b": addr["b"]}, max_bytes=2**20, send_timeout_s=0.5)
    chan = Channel("a", ["b"], a, session="s", deadline_s=0.5, max_bytes=2**20)
    try:
        with pytest.raises(PeerTimeout) as e:
            for _ in range(100_000):
                chan.send("x", "b", b"\0" * 1000)
        assert e.value.peer == "b"
        # bounded queue, not unbounded memory: both ends' queues and what the kernel buffers
        # (its autotuning decides how much: 12,000 messages were seen once on this machine)
        bound = 2 * QUEUE_MESSAGES + _kernel_buffered_bytes() // 1000
        assert chan.stats.op("x").messages < min(bound, 50_000)
    finally:
        a.close()
        b.close()


def test_a_timeout_after_dropped_replays_says_so():
    hub = InprocHub(["a", "b"])
    a, b = _channel_pair(hub)
    hub.link("a").send("b", encode(Envelope("s1", 10, "a", "y#0", 1)))  # jumps to seq 10
    assert b.recv("y", "a") == 1
    a.send("x", "b", 2)  # seq 0: at or below the jump, so dropped as a replay
    with pytest.raises(PeerTimeout) as e:
        b.recv("x", "a")
    assert "1 message(s) from 'a' were dropped as replays" in str(e.value)
