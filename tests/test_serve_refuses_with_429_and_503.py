"""A full queue answers 429 with Retry-After; a decision not made in time is 503 naming the
holders whose slice is missing; a peer the backend reports gone shows in /v1/health and makes
decisions fail at once with 503 naming it."""

import threading
from contextlib import contextmanager

from deadlines import deadline
from serve_support import FakeBackend, LiveService, serve_section, wait_for


@contextmanager
def _held(tmp_path, timeout_s: float, **backend):
    """A live service whose backend holds its decisions (serve.decision_timeout_s given),
    released before the service closes."""
    held = FakeBackend(hold=True, **backend)
    live = LiveService(tmp_path / "p.wal", serve=serve_section(decision_timeout_s=timeout_s),
                       backend=held)
    try:
        yield held, live
    finally:
        held.release()
        live.close()


def _ask_aside(live, rid: str) -> tuple[threading.Thread, dict]:
    """Ask for rid's decision in a thread of its own: (the thread, {"r": its answer} once
    answered)."""
    answer: dict = {}
    asker = threading.Thread(target=lambda: answer.setdefault(
        "r", live.call("POST", "/v1/decisions", {"id": rid})))
    asker.start()
    return asker, answer


def test_a_full_queue_answers_429_with_retry_after_naming_the_limit(tmp_path):
    backend = FakeBackend(paused=("contexts",))
    live = LiveService(tmp_path / "p.wal", serve=serve_section(queue_limit=2), backend=backend)
    try:
        for rid in ("q1", "q2"):
            assert live.call("POST", "/v1/contexts", {"id": rid, "features": [1, 2]})[0] == 202
        status, body, headers = live.call("POST", "/v1/contexts", {"id": "q3",
                                                                   "features": [1, 2]})
        assert status == 429 and "serve.queue_limit" in body["error"]
        assert int(headers["Retry-After"]) >= 1
        backend.resume("contexts")
        wait_for(lambda: live.service.queues["contexts"].depth == 0, "the queue empties")
        # refused, so not taken: the same id is welcome once there is room
        assert live.call("POST", "/v1/contexts", {"id": "q3", "features": [1, 2]})[0] == 202
    finally:
        live.close()


def test_a_decision_not_made_in_time_is_503_naming_the_missing_holders(tmp_path):
    with _held(tmp_path, 0.3, missing=["feature_holder.1"]) as (backend, live):
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "late"})
        assert status == 503 and body["missing"] == ["feature_holder.1"]
        assert "'late'" in body["error"] and "feature_holder.1" in body["error"]
        assert "decision_timeout_s" in body["error"]
        backend.release()  # decided after all: logged, counted late, a reward is welcome
        wait_for(lambda: live.service.metrics.decisions_late._value.get() == 1, "counted late")
        assert live.call("POST", "/v1/rewards", {"id": "late", "reward": 1.0})[0] == 202


def test_a_decision_the_backend_neither_makes_nor_refuses_in_time_is_503_after_the_grace(
        tmp_path):
    # no holder named missing: the shell waits a further grace for the leader's own refusal,
    # then answers 503 (in Python 3.11 the grace's wait ended in CancelledError and the
    # connection was dropped without an answer: the first wait had cancelled the shield)
    with _held(tmp_path, 0.3) as (backend, live):
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "stuck"})
        assert status == 503 and body["missing"] == [] and "'stuck'" in body["error"]
        assert "the backend did not finish" in body["error"]
        assert live.service.metrics.decision_timeouts._value.get() == 1
        backend.release()  # decided after all: logged and counted late
        wait_for(lambda: live.service.metrics.decisions_late._value.get() == 1, "counted late")


def test_a_decision_refused_within_the_grace_is_503_naming_the_missing_holders(tmp_path):
    with _held(tmp_path, 0.3) as (backend, live):
        asker, answer = _ask_aside(live, "refused-late")
        wait_for(lambda: live.service.decisions.open_tickets, "the decision waits")
        ticket = next(iter(live.service.decisions.open_tickets))
        threading.Timer(0.4, ticket.refuse, ("slices missing", ["feature_holder.1"])).start()
        asker.join(deadline(30))   # the leader's refusal lands after the timeout, within the grace
        status, body, _ = answer["r"]
        assert status == 503 and body["missing"] == ["feature_holder.1"]


def test_a_gone_peer_shows_in_health_and_fails_decisions_fast_naming_it(tmp_path):
    with _held(tmp_path, 60.0) as (backend, live):
        poster, waiting = _ask_aside(live, "open")
        wait_for(lambda: backend.batches_of("decisions"), "the backend holds a batch")
        backend.go_down("feature_holder.1")
        poster.join(deadline(30))
        status, body, _ = waiting["r"]  # the open decision is refused, not left to time out
        assert status == 503 and "feature_holder.1" in body["error"]
        status, body, _ = live.call("GET", "/v1/health")
        assert status == 200 and body["ready"] is False
        assert body["peers"] == {"feature_holder.1": "gone"}
        assert "feature_holder.1" in body["reason"]
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "new"})
        assert status == 503 and body["gone"] == ["feature_holder.1"]
        # the backend's reason beside the error, not nested in it
        assert body["error"] == "peer(s) feature_holder.1 gone: no decision can be made"
        assert "stopped answering" in body["reason"]
