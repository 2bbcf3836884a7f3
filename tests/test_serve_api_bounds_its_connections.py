"""A party's API bounds its connections: one beyond serve.max_connections is answered 503 and
closed; a request's head that does not come within serve.read_timeout_s (a connection that
says nothing, or trickles its headers), a body that does not come (408), and a keep-alive
connection silent for serve.idle_timeout_s are closed, each counted by reason; a decision
that waits for its batch longer than either timeout is still answered; the event loop's own
errors are logged once per kind with a count, not once each."""

import logging
import socket
import time
from urllib.parse import urlsplit

from mpcbandit.serve.connections import OncePerKind
from serve_support import DEADLINE_S, FakeBackend, LiveService, serve_section, wait_for


def _connect(url: str) -> socket.socket:
    parts = urlsplit(url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=DEADLINE_S)
    return sock


def _closed_by_the_party(sock: socket.socket) -> bytes:
    """Everything the party sent until it closed the connection."""
    got = b""
    while chunk := sock.recv(65536):
        got += chunk
    return got


def _closed(live: LiveService, reason: str) -> float:
    return live.service.metrics.registry.get_sample_value(
        "mpcbandit_connections_closed_total", {"reason": reason}) or 0.0


def test_a_connection_beyond_the_limit_is_answered_503_and_closed(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(max_connections=2))
    held = [_connect(live.url) for _ in range(2)]
    try:
        wait_for(lambda: live.service.metrics.registry.get_sample_value(
            "mpcbandit_connections_open") == 2, "two connections open")
        extra = _connect(live.url)
        answer = _closed_by_the_party(extra)
        assert answer.startswith(b"HTTP/1.1 503") and b"serve.max_connections" in answer
        assert _closed(live, "limit") == 1
        held.pop().close()
        wait_for(lambda: live.service.metrics.registry.get_sample_value(
            "mpcbandit_connections_open") == 1, "the closed connection let go")
        assert live.call("GET", "/v1/health")[0] == 200
    finally:
        for sock in held:
            sock.close()
        live.close()


def test_a_head_that_does_not_come_within_the_read_timeout_is_closed(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(read_timeout_s=0.3))
    try:
        silent = _connect(live.url)
        trickle = _connect(live.url)
        trickle.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")  # and never the blank line
        assert _closed_by_the_party(silent) == b""
        assert _closed_by_the_party(trickle) == b""
        assert _closed(live, "read_timeout") == 2
        assert live.call("GET", "/v1/health")[0] == 200  # an ordinary caller is unaffected
    finally:
        live.close()


def test_a_body_that_does_not_come_is_answered_408(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(read_timeout_s=0.3))
    try:
        sock = _connect(live.url)
        sock.sendall(b"POST /v1/contexts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: 100\r\n\r\n{\"id\": ")
        answer = _closed_by_the_party(sock)
        assert answer.startswith(b"HTTP/1.1 408") and b"serve.read_timeout_s" in answer
        assert not live.service.records  # nothing half-read was logged
    finally:
        live.close()


def test_a_silent_keep_alive_connection_is_closed_after_the_idle_timeout(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(idle_timeout_s=0.3))
    try:
        sock = _connect(live.url)
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = _closed_by_the_party(sock)  # answered, then closed once silent
        assert answer.startswith(b"HTTP/1.1 200")
        wait_for(lambda: _closed(live, "idle") == 1, "the idle connection counted")
        assert _closed(live, "read_timeout") == 0
    finally:
        live.close()


def test_a_decision_waiting_for_its_batch_outlives_both_timeouts(tmp_path):
    backend = FakeBackend(hold=True)
    serve = serve_section(read_timeout_s=0.2, idle_timeout_s=0.2, decision_timeout_s=30.0)
    live = LiveService(tmp_path / "p.wal", serve=serve, backend=backend)
    try:
        sock = _connect(live.url)
        body = b'{"id": "d1"}'
        sock.sendall(b"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                     b"\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        wait_for(lambda: backend.batches_of("decisions"), "the decision handed to the backend")
        time.sleep(0.6)  # the decision waits beyond both timeouts
        assert live.service.metrics.registry.get_sample_value("mpcbandit_connections_open") == 1
        backend.release()
        sock.settimeout(DEADLINE_S)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200")
        sock.close()
        assert _closed(live, "read_timeout") == 0 and _closed(live, "idle") == 0
    finally:
        live.close()


def test_a_flood_of_one_error_is_logged_once_with_a_count(caplog):
    report = OncePerKind(logging.getLogger("test.once"), every_s=0.0)
    caplog.set_level(logging.WARNING, "test.once")
    for _ in range(1000):
        report.loop_handler(None, {"message": "socket.accept() out of system resource",
                                   "exception": OSError(24, "Too many open files")})
    first, *rest = [r.getMessage() for r in caplog.records]
    assert "out of system resource" in first and "Too many open files" in first
    assert sum(int(line.split(": ")[1].split()[0]) for line in rest) == 999


def test_a_flood_within_the_reporting_period_is_one_line(caplog):
    report = OncePerKind(logging.getLogger("test.once"), every_s=3600.0)
    caplog.set_level(logging.WARNING, "test.once")
    for _ in range(1000):
        report("limit", "refused a connection")
    assert len(caplog.records) == 1
