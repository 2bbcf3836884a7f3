"""With serve.probe_port, /v1/health and /metrics have a listener of their own on a thread of
their own: a probe is answered while the API's event loop is busy (an overloaded arm-puller's
loop, with thousands of decisions open, stopped answering its own probes), with the same
token; the listener stops with the API."""

import threading
import time

from serve_support import DEADLINE_S, LiveService, call, serve_section
from test_serve_token_guards_an_api_beyond_loopback import TOKEN, token_file


def _busy(live: LiveService, seconds: float) -> threading.Event:
    """Block the API's event loop for `seconds` (as a flood of requests would); set when done."""
    done = threading.Event()

    def block():
        time.sleep(seconds)
        done.set()
    live.loop.call_soon_threadsafe(block)
    return done


def test_probes_are_answered_while_the_apis_loop_is_blocked(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(probe_port=0))
    try:
        probes = live.running.probe_url
        assert probes and probes != live.url
        done = _busy(live, 5.0)
        status, health, _ = call(probes, "GET", "/v1/health")
        assert status == 200 and health["ready"] is True
        status, metrics, _ = call(probes, "GET", "/metrics")
        assert status == 200 and "mpcbandit_requests_total" in metrics
        assert not done.is_set()  # answered while the API's loop was still blocked
        done.wait(DEADLINE_S)
        assert live.call("GET", "/v1/health")[0] == 200  # the API's own routes stay
        assert call(probes, "POST", "/v1/contexts", {"id": "x", "features": [1, 2]})[0] == 404
    finally:
        live.close()
    assert not any(t.name == "probes" and t.is_alive() for t in threading.enumerate())


def test_the_probe_listener_takes_the_apis_token(tmp_path):
    serve = serve_section(probe_port=0, token_file=str(token_file(tmp_path)))
    live = LiveService(tmp_path / "p.wal", serve=serve)
    try:
        probes = live.running.probe_url
        assert call(probes, "GET", "/v1/health")[0] == 401
        assert call(probes, "GET", "/v1/health", token=TOKEN)[0] == 200
    finally:
        live.close()


def test_without_probe_port_there_is_no_second_listener(tmp_path):
    live = LiveService(tmp_path / "p.wal")
    try:
        assert live.running.probe_url is None
    finally:
        live.close()
