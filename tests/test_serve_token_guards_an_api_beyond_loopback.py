"""A party's API on loopback answers this machine; bound anywhere else it needs a bearer
token read from a 0600 file (in folders no one else may write, not a FIFO), or it refuses to
start naming the option; tokens are compared in constant time, and a header that is not ASCII
is a 401 like any wrong token, counted, never a 500."""

import asyncio
import hmac
import http.client
import os
import threading
from urllib.parse import urlsplit

import pytest

from deadlines import deadline
from mpcbandit.errors import ConfigError
from mpcbandit.net.security import SecurityError
from mpcbandit.serve import access
from mpcbandit.serve.access import api_token, bearer_matches
from mpcbandit.serve.server import start_service
from mpcbandit.serve.service import ServiceRole
from serve_support import FakeBackend, LiveService, serve_section

TOKEN = "3f" * 20


def token_file(tmp_path, text=TOKEN, mode=0o600):
    path = tmp_path / "api.token"
    path.write_text(text + "\n")
    path.chmod(mode)
    return path


def test_binding_beyond_loopback_without_a_token_refuses_to_start_naming_the_option(tmp_path):
    serve = serve_section(bind="0.0.0.0")
    with pytest.raises(ConfigError) as e:
        asyncio.run(start_service(serve, ServiceRole("p.0", features=1), FakeBackend(),
                                  tmp_path / "p.wal"))
    assert e.value.key == "serve.token_file" and "0.0.0.0" in e.value.reason
    assert not (tmp_path / "p.wal").exists()  # refused before anything was opened


@pytest.mark.parametrize("bind", ["127.0.0.1", "127.0.0.2", "localhost"])
def test_loopback_needs_no_token(bind):
    assert api_token(serve_section(bind=bind)) is None


def test_a_token_file_others_may_read_is_refused(tmp_path):
    path = token_file(tmp_path, mode=0o640)
    with pytest.raises(SecurityError) as e:
        api_token(serve_section(bind="0.0.0.0", token_file=str(path)))
    assert "0640" in str(e.value) and "chmod 600" in str(e.value)


@pytest.mark.parametrize("text", ["short", "two words " + "x" * 40])
def test_a_token_that_is_short_or_not_one_word_is_refused(tmp_path, text):
    with pytest.raises(ConfigError) as e:
        api_token(serve_section(bind="0.0.0.0", token_file=str(token_file(tmp_path, text))))
    assert e.value.key == "serve.token_file"


def test_a_missing_token_file_is_named(tmp_path):
    with pytest.raises(ConfigError) as e:
        api_token(serve_section(token_file=str(tmp_path / "absent")))
    assert e.value.key == "serve.token_file" and "absent" in e.value.reason


def test_with_a_token_every_route_needs_it(tmp_path):
    serve = serve_section(token_file=str(token_file(tmp_path)))
    live = LiveService(tmp_path / "p.wal", serve=serve)
    try:
        body = {"id": "t1", "features": [1, 2]}
        for token in (None, "wrong", TOKEN[:-1], TOKEN + "0"):
            status, answer, headers = live.call("POST", "/v1/contexts", body, token=token)
            assert status == 401 and "bearer token" in answer["error"]
            assert headers["WWW-Authenticate"].startswith("Bearer")
        assert live.call("GET", "/v1/health")[0] == 401
        assert live.call("GET", "/metrics")[0] == 401
        assert live.call("POST", "/v1/contexts", body, token=TOKEN)[0] == 202
        assert live.call("GET", "/v1/health", token=TOKEN)[0] == 200
    finally:
        live.close()


def test_the_token_is_compared_in_constant_time(monkeypatch):
    compared, real = [], hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(access.hmac, "compare_digest", spy)
    assert bearer_matches(f"Bearer {TOKEN}", TOKEN)
    assert not bearer_matches("Bearer nope", TOKEN)
    assert compared == [(TOKEN.encode(), TOKEN.encode()), (b"nope", TOKEN.encode())]


def test_a_token_file_in_a_folder_others_may_write_is_refused(tmp_path):
    folder = tmp_path / "open"
    folder.mkdir()
    path = token_file(folder)
    folder.chmod(0o777)  # anyone could swap the file for their own token
    with pytest.raises(SecurityError) as e:
        api_token(serve_section(bind="0.0.0.0", token_file=str(path)))
    assert "writable by group or others" in str(e.value) and str(folder) in str(e.value)


def test_a_token_file_that_is_a_fifo_is_refused_at_once(tmp_path):
    path = tmp_path / "api.token"
    os.mkfifo(path, 0o600)
    raised = []

    def read():
        try:
            api_token(serve_section(bind="0.0.0.0", token_file=str(path)))
        except SecurityError as e:
            raised.append(e)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(deadline(10))
    if reader.is_alive():  # opening it waits for a writer: let the thread go
        with open(path, "w"):
            pass
        pytest.fail("api_token waited on a FIFO")
    assert raised and "not a regular file" in str(raised[0])


def _raw_call(url: str, authorization: bytes) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=deadline(10))
    try:
        conn.putrequest("GET", "/v1/health")
        conn.putheader("Authorization", authorization)
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def test_a_header_that_is_not_ascii_is_a_counted_401_not_a_500(tmp_path, caplog):
    serve = serve_section(token_file=str(token_file(tmp_path)))
    live = LiveService(tmp_path / "p.wal", serve=serve)
    try:
        for value in (b"Bearer \xff\xfe" + TOKEN.encode(), "Bearer ключ".encode(),
                      b"\xc3\xa9 " + TOKEN.encode()):
            assert _raw_call(live.url, value) == 401
        metrics = live.call("GET", "/metrics", token=TOKEN)[1]
    finally:
        live.close()
    text = metrics if isinstance(metrics, str) else str(metrics)
    assert 'route="/v1/health",status="401"} 3.0' in text
    assert "Traceback" not in caplog.text and "Error handling request" not in caplog.text
