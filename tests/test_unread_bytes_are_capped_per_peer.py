"""An authenticated peer cannot fill a party's memory: unread bytes are capped per peer, the cap
derives from what the protocol legitimately sends ahead, and real runs stay under it."""

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError, ProtocolError
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols import MIN_BUFFER_CAP, get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

MIB = 2**20


def _block(mib: int) -> np.ndarray:
    return np.zeros(mib * MIB // 8, dtype=np.uint64)


def test_future_tagged_flood_is_refused_naming_peer_and_tag_before_the_cap_is_passed():
    def flooder(chan):
        for _ in range(8):  # 8 x 1 MiB under tags the victim will not ask for yet
            chan.send("later", "victim", _block(1))

    def victim(chan):
        chan.recv("now", "flooder")

    with pytest.raises(ProtocolError) as e:
        run_inproc({"flooder": flooder, "victim": victim}, deadline_s=deadline(5),
                   max_bytes=2 * MIB, max_buffered_bytes=3 * MIB + MIB // 2)
    assert e.value.peer == "flooder" and e.value.tag.startswith("later#")
    assert "run.max_buffered_mb" in str(e.value) and "unread bytes" in str(e.value)


def test_peak_unread_bytes_never_exceed_the_cap():
    def flooder(chan):
        for _ in range(8):
            chan.send("later", "victim", _block(1))

    def victim(chan):
        try:
            chan.recv("now", "flooder")
        except ProtocolError:
            return chan.peak_buffered_bytes

    cap = 3 * MIB + MIB // 2
    results, _ = run_inproc({"flooder": flooder, "victim": victim}, deadline_s=deadline(5),
                            max_bytes=2 * MIB, max_buffered_bytes=cap)
    assert 3 * MIB <= results["victim"] <= cap


def test_reading_frees_room_so_a_long_stream_under_the_cap_goes_through():
    def sender(chan):
        for _ in range(20):  # 20 MiB in all, never more than 3 unread (the receiver reads)
            chan.send("x", "receiver", _block(1))
            chan.recv("ack", "receiver")

    def receiver(chan):
        total = 0
        for _ in range(20):
            total += chan.recv("x", "sender").nbytes
            chan.send("ack", "sender", None)
        return total, chan.peak_buffered_bytes

    results, _ = run_inproc({"sender": sender, "receiver": receiver}, deadline_s=deadline(5),
                            max_bytes=2 * MIB, max_buffered_bytes=3 * MIB)
    total, peak = results["receiver"]
    assert total == 20 * MIB and peak < 2 * MIB


def test_the_configured_cap_wins_and_the_default_is_twice_what_the_protocol_sends_ahead():
    cfg = load_config("configs/hannun-synthetic.toml")
    proto = get_protocol("hannun")
    ahead = proto.sends_ahead(cfg.section)
    assert proto.buffer_cap(cfg) == max(MIN_BUFFER_CAP, 2 * ahead)
    big = load_config("configs/hannun-synthetic.toml", ["hannun.iterations=2000000"])
    assert proto.buffer_cap(big) == 2 * proto.sends_ahead(big.section) > MIN_BUFFER_CAP
    configured = load_config("configs/hannun-synthetic.toml", ["run.max_buffered_mb=5"])
    assert proto.buffer_cap(configured) == 5 * MIB


def test_a_negative_cap_is_refused_naming_the_key():
    with pytest.raises(ConfigError) as e:
        load_config("configs/demo-sum.toml", ["run.max_buffered_mb=-1"])
    assert "run.max_buffered_mb" in str(e.value)


@pytest.mark.parametrize("path, overrides", [
    ("configs/o3m-synthetic.toml", ["o3m.iterations=400"]),
    ("configs/hannun-synthetic.toml", ["hannun.iterations=300"]),
    ("configs/demo-sum.toml", ["demo.iterations=50"]),
])
def test_a_real_run_keeps_every_peer_under_what_its_protocol_declares(path, overrides):
    cfg = load_config(path, ["run.security=\"none\"", *overrides])
    proto = get_protocol(cfg.protocol)
    _, chans = run_protocol_inproc(cfg)
    peak = max(c.peak_buffered_bytes for c in chans.values())
    assert 0 < peak <= proto.sends_ahead(cfg.section)
    assert all(c.max_buffered_bytes == proto.buffer_cap(cfg) for c in chans.values())


def test_o3m_passive_participants_stay_within_the_window_however_long_the_run():
    from mpcbandit.protocols.o3m.protocol import WINDOW_ROUNDS
    cfg = load_config("configs/o3m-synthetic.toml",
                      ["run.security=\"none\"", f"o3m.iterations={6 * WINDOW_ROUNDS}"])
    s = cfg.section
    _, chans = run_protocol_inproc(cfg)
    per_round = 8 * s.arms * s.dims
    assert chans["ap.0"].peak_buffered_bytes <= 2 * WINDOW_ROUNDS * (per_round + 512)


def test_a_flood_before_the_hello_completes_is_refused_by_the_same_cap():
    # A waits for the hello of C, who never comes; B, whose hello A has, floods A meanwhile
    # (a stolen peer key took a waiting party from 47 MB to 1,646 MB)
    import threading

    from mpcbandit.launch import pick_base_port
    from mpcbandit.net.zmq_link import ZmqLink

    base = pick_base_port("127.0.0.1", 3)
    addr = {n: f"tcp://127.0.0.1:{base + i}" for i, n in enumerate("abc")}
    a = ZmqLink("a", addr["a"], {"b": addr["b"], "c": addr["c"]}, max_bytes=2 * MIB, linger_s=0)
    b = ZmqLink("b", addr["b"], {"a": addr["a"]}, max_bytes=2 * MIB, linger_s=0)
    stop = threading.Event()

    def flood():
        b.hello(deadline(10))
        while not stop.is_set():  # 1 MiB messages until A refuses (or the test ends)
            if not b.try_send("a", [b"\x95" + bytes(MIB)]):
                b.wait_room("a", 0.1)

    t = threading.Thread(target=flood, daemon=True)
    t.start()
    try:
        with pytest.raises(ProtocolError) as e:
            a.hello(deadline(30), max_pending_bytes=3 * MIB)
        assert e.value.peer == "b" and "before the hello completed" in str(e.value)
        assert "run.max_buffered_mb" in str(e.value)
    finally:
        stop.set()
        t.join(deadline(5))
        a.close(0)
        b.close(0)
