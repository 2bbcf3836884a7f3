"""Requests that arrive within serve.batch_ms of the first waiting one (at most
serve.max_batch) reach the backend together as one batch, in arrival order."""

import logging
import threading

from deadlines import deadline
from mpcbandit.serve.batching import BatchQueue, QueueFull
from serve_support import (FakeBackend, LiveService, serve_section, take_once_waiting,
                           wait_for)


def test_a_batch_holds_at_most_max_items_in_arrival_order():
    queue = BatchQueue("contexts", limit=10)
    for i in range(5):
        queue.reserve()
        queue.put(f"c{i}")
    first = queue.next_batch(max_items=3, window_s=0.0, wait_s=1.0)
    second = queue.next_batch(max_items=3, window_s=0.0, wait_s=1.0)
    assert (first.number, first.items) == (1, ["c0", "c1", "c2"])
    assert (second.number, second.items) == (2, ["c3", "c4"])
    assert queue.next_batch(max_items=3, window_s=0.0, wait_s=0.01) is None


def test_requests_arriving_within_the_window_join_the_first_ones_batch():
    queue = BatchQueue("decisions", limit=10)
    queue.reserve()
    queue.put("d0")
    taker, taken = take_once_waiting(queue, max_items=4, window_s=60.0, wait_s=60.0)
    for i in range(1, 4):  # within the (long) window: the batch closes at max_items
        queue.reserve()
        queue.put(f"d{i}")
    taker.join(deadline(30))
    assert taken["batch"].items == ["d0", "d1", "d2", "d3"]


def test_a_busy_backend_is_not_held_by_an_open_window_and_the_requests_stay_queued():
    queue = BatchQueue("decisions", limit=10)
    for i in range(2):
        queue.reserve()
        queue.put(f"d{i}")
    # a backend with ops under way looks without waiting: the window (60 s) is still open
    assert queue.next_batch(max_items=4, window_s=60.0, wait_s=0.0, patient=False) is None
    assert queue.depth == 2
    for i in range(2, 4):   # the batch is full: it goes at once
        queue.reserve()
        queue.put(f"d{i}")
    full = queue.next_batch(max_items=4, window_s=60.0, wait_s=0.0, patient=False)
    assert full.items == ["d0", "d1", "d2", "d3"]
    queue.reserve()
    queue.put("d4")         # a window that has passed: what waits goes
    assert queue.next_batch(max_items=4, window_s=0.0, wait_s=0.0, patient=False).items == ["d4"]


def test_a_closed_queue_hands_out_what_waits_without_a_window_then_is_drained():
    queue = BatchQueue("rewards", limit=10)
    queue.reserve()
    queue.put("r0")
    queue.close()
    assert queue.next_batch(max_items=8, window_s=60.0, wait_s=60.0).items == ["r0"]
    assert queue.drained and queue.next_batch(8, 60.0, 60.0) is None


def test_the_queue_refuses_past_its_limit_counting_requests_being_accepted():
    queue = BatchQueue("contexts", limit=2)
    queue.reserve()
    queue.put("c0")
    queue.reserve()  # accepted, being logged
    try:
        queue.reserve()
        raise AssertionError("a third request was given a place")
    except QueueFull as e:
        assert "serve.queue_limit" in str(e) and "contexts" in str(e)
    queue.release()
    queue.reserve()


def test_concurrent_decisions_reach_the_backend_as_one_batch(tmp_path):
    backend = FakeBackend(paused=("decisions",))
    live = LiveService(tmp_path / "p.wal", serve=serve_section(batch_ms=50.0, max_batch=6),
                       backend=backend)
    try:
        answers = []
        posters = [threading.Thread(target=lambda i=i: answers.append(
            live.call("POST", "/v1/decisions", {"id": f"b{i}"})[0])) for i in range(6)]
        for t in posters:
            t.start()
        wait_for(lambda: live.service.queues["decisions"].depth == 6, "6 decisions queued")
        backend.resume("decisions")
        for t in posters:
            t.join(deadline(30))
        assert answers == [200] * 6
        assert [sorted(b) for b in backend.batches_of("decisions")] == [
            sorted(f"b{i}" for i in range(6))]
    finally:
        live.close()


def test_contexts_reach_the_backend_in_the_order_they_were_acknowledged(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="mpcbandit.serve.service")
    backend = FakeBackend(paused=("contexts",))
    live = LiveService(tmp_path / "p.wal", serve=serve_section(max_batch=4), backend=backend)
    try:
        ids = [f"x{i}" for i in range(10)]
        for rid in ids:
            assert live.call("POST", "/v1/contexts", {"id": rid, "features": [0, 1]})[0] == 202
        backend.resume("contexts")
        wait_for(lambda: sum(map(len, backend.batches_of("contexts"))) == 10, "10 contexts")
        batches = backend.batches_of("contexts")
        assert [len(b) for b in batches] == [4, 4, 2]
        assert [rid for b in batches for rid in b] == ids
        logged = [r.getMessage() for r in caplog.records if r.name == "mpcbandit.serve.service"]
        assert any(m.startswith("batch contexts #1: 4 request(s)") for m in logged), logged
    finally:
        live.close()
