"""A party that only sends, and finishes first, exits only once its reader has read all of it:
the closing handshake (bye, then an acknowledgement) replaces a linger after which libzmq
dropped what was still queued. A slow reader slows the close; a reader that stops reading is
named by the sender; a lost message is named by the reader."""

import threading
import time

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import PeerTimeout, ProtocolError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import BYE, Channel
from mpcbandit.net.zmq_link import ZmqLink

MIB = 2**20


def _pair(deadline_s: float, linger_s: float = 2.0):
    """Two channels over real ZeroMQ TCP links on loopback, after their hello."""
    base = pick_base_port("127.0.0.1", 2)
    addr = {"a": f"tcp://127.0.0.1:{base}", "b": f"tcp://127.0.0.1:{base + 1}"}
    links = {n: ZmqLink(n, addr[n], {p: addr[p] for p in addr if p != n}, max_bytes=4 * MIB,
                        linger_s=linger_s, send_timeout_s=deadline_s) for n in addr}
    t = threading.Thread(target=links["a"].hello, args=(deadline(10),))
    t.start()
    links["b"].hello(deadline(10))
    t.join()
    return {n: Channel(n, [p for p in addr if p != n], links[n], session="s",
                       deadline_s=deadline_s, max_bytes=4 * MIB, max_buffered_bytes=256 * MIB)
            for n in addr}


def _in_thread(fn):
    out = {}

    def body():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out["error"] = e

    t = threading.Thread(target=body, daemon=True)
    t.start()
    return t, out


def test_a_sender_that_finishes_while_its_reader_sleeps_past_the_linger_delivers_everything():
    chans = _pair(deadline_s=deadline(10), linger_s=2.0)
    # 1,800 x 16 KiB: the reader's queue takes 1,000 messages and the kernel a few hundred; the
    # rest waits in the sender's queue, which libzmq dropped once the old 2 s linger had passed
    blocks = [np.full(2048, i, dtype=np.uint64) for i in range(1800)]
    sent = threading.Event()

    def sender():
        for b in blocks:
            chans["a"].send("x", "b", b)
        sent.set()
        took = chans["a"].finish()
        chans["a"].close()
        return took

    t, out = _in_thread(sender)
    assert sent.wait(deadline(30))
    time.sleep(3.0)  # the reader is busy for longer than the sender's linger
    got = [chans["b"].recv("x", "a") for _ in blocks]
    chans["b"].finish()
    chans["b"].close()
    t.join(deadline(30))
    assert "error" not in out, out
    assert all(np.array_equal(g, b) for g, b in zip(got, blocks))
    assert out["value"] >= 2.0  # the sender waited for its reader, beyond the old linger


def test_a_reader_slower_than_the_deadline_in_all_slows_the_close_but_never_breaks_it():
    chans = _pair(deadline_s=deadline(1.0))   # the reader's pace below is as much slower
    n = 30

    def sender():
        for i in range(n):
            chans["a"].send("x", "b", np.full(1000, i, dtype=np.uint64))
        took = chans["a"].finish()
        chans["a"].close()
        return took

    t, out = _in_thread(sender)
    got = []
    for _ in range(n):  # 30 x 0.1 s: three deadlines in all, never one without reading
        time.sleep(deadline(0.1))
        got.append(int(chans["b"].recv("x", "a")[0]))
    chans["b"].finish()
    chans["b"].close()
    t.join(deadline(30))
    assert "error" not in out, out
    assert got == list(range(n)) and out["value"] > deadline(1.0)


def test_a_sender_names_a_reader_that_stopped_reading():
    chans = _pair(deadline_s=1.0)
    chans["a"].send("x", "b", 1)
    with pytest.raises(PeerTimeout) as e:
        chans["a"].finish()  # b never reads again
    assert e.value.peer == "b" and e.value.tag == BYE
    assert "read none of the last 1 message(s)" in str(e.value)
    for c in chans.values():
        c.close(0)


def test_a_peer_that_finished_without_sending_what_is_awaited_is_named_at_once():
    chans = _pair(deadline_s=deadline(30))
    t, out = _in_thread(lambda: chans["a"].finish())
    t0 = time.monotonic()
    with pytest.raises(ProtocolError) as e:
        chans["b"].recv("result", "a")
    assert time.monotonic() - t0 < deadline(10)  # not the 30 s deadline
    assert e.value.peer == "a" and e.value.tag == "result#0"
    assert "finished its part without sending this message" in str(e.value)
    t.join(deadline(10))
    assert "error" not in out, out
    for c in chans.values():
        c.close(0)


def test_a_reader_waiting_for_a_message_lost_on_the_way_is_told_so_by_the_bye():
    chans = _pair(deadline_s=deadline(5))
    chans["a"].send("x", "b", 1)
    chans["a"]._seq_out["b"] += 1  # as if the next message had been lost with a connection
    chans["a"].send("x", "b", 2)
    t, _ = _in_thread(lambda: chans["a"].finish())
    assert chans["b"].recv("x", "a") == 1 and chans["b"].recv("x", "a") == 2
    with pytest.raises(ProtocolError) as e:  # b waits for a message that was lost
        chans["b"].recv("x", "a")
    assert e.value.peer == "a" and e.value.tag == BYE
    assert "1 of the 3 messages it sent never arrived" in str(e.value)
    t.join(deadline(10))
    for c in chans.values():
        c.close(0)
