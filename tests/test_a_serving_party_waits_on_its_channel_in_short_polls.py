"""A party of a service waits on its channel in short polls (Channel.poll) between looking at
its queues: a poll with nothing to read returns None (one timed wait, not a spin), a message
that came is returned, and a peer whose connection stays down is named (PeerGone) across polls
however short; a hello that timed out and is tried again completes with a peer that greeted
during the first attempt and never greets again."""

import threading
import time
from contextlib import contextmanager

import pytest

from deadlines import deadline
from mpcbandit.errors import PeerGone, PeerTimeout
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import Channel
from mpcbandit.net.inproc import InprocHub
from mpcbandit.net.zmq_link import ZmqLink


def _pair():
    hub = InprocHub(["a", "b"])
    return [Channel(n, [m for m in "ab" if m != n], hub.link(n), session="s",
                    deadline_s=deadline(5), max_bytes=2**20) for n in "ab"]


def test_a_poll_returns_none_when_nothing_came_and_the_message_once_it_has():
    a, b = _pair()
    assert a.poll("x", ["b"], 0.0) is None
    assert a.poll("x", ["b"], 0.05) is None
    b.send("x", "a", {"v": 1})
    b.send("y", "a", 2)   # another label's message does not answer this poll
    assert a.poll("x", ["b"], 1.0) == ("b", {"v": 1})
    assert a.poll("x", ["b"], 0.0) is None
    assert a.recv("y", "b") == 2


class _DeadPeerLink:
    """A link whose peer's connection has been down for 3 s: nothing ever arrives."""

    def poll(self, timeout_s):
        time.sleep(min(timeout_s, 0.01))
        return None

    def down_for(self, peer):
        return 3.0


def test_short_polls_name_a_peer_whose_connection_stays_down():
    chan = Channel("a", ["b"], _DeadPeerLink(), session="s", deadline_s=deadline(30),
                   max_bytes=2**20)
    end = time.monotonic() + deadline(10)
    with pytest.raises(PeerGone, match="'b' is gone"):
        while time.monotonic() < end:
            assert chan.poll("x", ["b"], 0.0) is None


def test_a_retried_hello_completes_with_a_peer_that_greeted_only_once():
    base = pick_base_port("127.0.0.1", 3)
    addr = {n: f"tcp://127.0.0.1:{base + k}" for k, n in enumerate("abc")}
    a = ZmqLink("a", addr["a"], {"b": addr["b"], "c": addr["c"]}, max_bytes=2**20)
    b = ZmqLink("b", addr["b"], {"a": addr["a"]}, max_bytes=2**20)
    c = None
    b_done = []
    greeter = threading.Thread(target=lambda: b_done.append(b.hello(deadline(10), b"b")))
    greeter.start()
    try:
        with pytest.raises(PeerTimeout, match="c"):   # b greets meanwhile; c is not there
            a.hello(deadline(1.0), b"a")
        greeter.join(deadline(10))
        assert b_done == [{"a": b"a"}]   # b's hello is done: it never greets again
        assert a.not_greeted() == ["c"]
        c = ZmqLink("c", addr["c"], {"a": addr["a"]}, max_bytes=2**20)
        c.hello(deadline(5), b"c")
        assert a.hello(deadline(5), b"a") == {"b": b"b", "c": b"c"}
    finally:
        greeter.join(deadline(10))
        for link in (a, b, c):
            if link is not None:
                link.close(0)


@contextmanager
def _quiet_channel():
    """A channel on a real link whose peer never sends, and the timeouts of its receives."""
    base = pick_base_port("127.0.0.1", 2)
    link = ZmqLink("a", f"tcp://127.0.0.1:{base}", {"b": f"tcp://127.0.0.1:{base + 1}"},
                   max_bytes=2**20)
    try:
        receives = []
        real = link._recv
        link._recv = lambda timeout_s: receives.append(timeout_s) or real(timeout_s)
        yield Channel("a", ["b"], link, session="s", deadline_s=30, max_bytes=2**20), receives
    finally:
        link.close(0)


def test_a_poll_on_a_quiet_channel_is_one_timed_wait_not_a_spin():
    """zmq waits whole milliseconds: a poll's wait rounded down ended up to a millisecond short
    of its deadline, and the poll spun through the rest with zero-millisecond receives (~40
    receives a 20 ms poll: most of an idle serving party's CPU). Rounded up, a poll with nothing
    to read is its timed wait and one last look."""
    with _quiet_channel() as (chan, receives):
        for _ in range(10):
            assert chan.poll("x", ["b"], 0.02) is None
        assert len(receives) <= 3 * 10, sorted(receives)[:20]


def test_wait_any_on_a_quiet_channel_is_one_timed_wait_not_a_spin():
    """p′ with batches under way waits for whichever op can go on (Channel.wait_any) 2 ms at a
    time: each wait is a timed wait and one last look, never a run of zero-millisecond
    receives."""
    with _quiet_channel() as (chan, receives):
        t0 = time.perf_counter()
        for _ in range(20):
            assert chan.wait_any([("x", "b"), ("y", "b")], 0.002) is False
        assert time.perf_counter() - t0 >= 20 * 0.002
        assert len(receives) <= 3 * 20, sorted(receives)[:20]
