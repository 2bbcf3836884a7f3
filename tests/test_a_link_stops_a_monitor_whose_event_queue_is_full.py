"""A link's connection monitor stops (at `forget` and `close`) even when its queue of unread
events is full: libzmq's last event waits for room, and disable_monitor blocked for ever
(holding the interpreter: the scenario runs in a child process, killed at a deadline)."""

import subprocess
import sys
from pathlib import Path

from deadlines import deadline

SCENARIO = """
import time, zmq
from mpcbandit.net.zmq_link import stop_monitor
ctx = zmq.Context()
sock = ctx.socket(zmq.DEALER)
sock.setsockopt(zmq.RECONNECT_IVL, 1)       # a retry every millisecond, each an event
sock.setsockopt(zmq.RECONNECT_IVL_MAX, 1)
mon = sock.get_monitor_socket()
sock.connect("tcp://127.0.0.1:1")           # nothing listens there
time.sleep(4.0)                             # ~650 events a second: past the queue's 1,000
stop_monitor(sock, mon)
assert mon.closed
sock.close(linger=0)
ctx.term()
print("stopped")
"""


def test_a_monitor_with_its_event_queue_full_stops_and_closes():
    done = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True,
                          timeout=deadline(40), cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0 and done.stdout.strip() == "stopped", done.stderr
