"""A party in a long legitimate wait (SAMBA's data client waits the whole run) learns that the
peer it waits for died within seconds (its connection down for GONE_S), not after the wait."""

import os
import signal
import subprocess
import sys
import threading

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.errors import PeerGone
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import GONE_S, Channel
from mpcbandit.net.zmq_link import ZmqLink

PEER = """
import sys, time
from mpcbandit.net.zmq_link import ZmqLink
a, b = sys.argv[1:3]
link = ZmqLink("b", b, {"a": a}, max_bytes=2**20)
link.hello(float(sys.argv[3]))
print("ready", flush=True)
time.sleep(600)
"""


def test_a_killed_peer_is_named_while_waiting_far_longer_than_the_deadline():
    base = pick_base_port("127.0.0.1", 2)
    a_addr, b_addr = f"tcp://127.0.0.1:{base}", f"tcp://127.0.0.1:{base + 1}"
    peer = popen([sys.executable, "-c", PEER, a_addr, b_addr, str(deadline(20))], cwd=REPO,
                 env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                 text=True)
    link = ZmqLink("a", a_addr, {"b": b_addr}, max_bytes=2**20, linger_s=0)
    chan = Channel("a", ["b"], link, session="s", deadline_s=1.5, max_bytes=2**20)
    try:
        link.hello(deadline(20))
        assert peer.stdout.readline().strip() == "ready"
        peer.send_signal(signal.SIGKILL)
        peer.wait(deadline(10))
        # the wait allows 300 s; only noticing the dead connection can end it early
        with pytest.raises(PeerGone) as e:
            chan.recv("result", "b", deadline_s=300)
        assert e.value.peer == "b" and e.value.tag == "result#0"
        assert "connection has been down for" in str(e.value)
        assert GONE_S <= e.value.deadline_s < deadline(10)  # down for GONE_S, then gives up
    finally:
        if peer.poll() is None:
            peer.kill()
        chan.close()


def test_a_peer_that_is_up_but_slow_is_waited_for():
    base = pick_base_port("127.0.0.1", 2)
    a_addr, b_addr = f"tcp://127.0.0.1:{base}", f"tcp://127.0.0.1:{base + 1}"
    a = ZmqLink("a", a_addr, {"b": b_addr}, max_bytes=2**20, linger_s=0)
    b = ZmqLink("b", b_addr, {"a": a_addr}, max_bytes=2**20, linger_s=0)
    ca = Channel("a", ["b"], a, session="s", deadline_s=0.3, max_bytes=2**20)
    cb = Channel("b", ["a"], b, session="s", deadline_s=0.3, max_bytes=2**20)
    try:
        t = threading.Thread(target=a.hello, args=(deadline(10),))
        t.start()
        b.hello(deadline(10))
        t.join()
        timer = threading.Timer(1.5, lambda: cb.send("late", "a", 7))  # 5 deadlines later
        timer.start()
        assert ca.recv("late", "b", deadline_s=deadline(30)) == 7
        timer.join()
    finally:
        ca.close()
        cb.close()
