"""With serve.tls_cert and serve.tls_key a party's API speaks HTTPS only; with
serve.tls_client_ca every caller must show a certificate that chains to it (mutual TLS: an
organisation's application proves itself by certificate instead of a bearer token). The key is
checked as the secret keys are; a half-given setting is named."""

import http.client
import ssl
from urllib.parse import urlsplit

import pytest

from mpcbandit.errors import ConfigError
from mpcbandit.net.security import SecurityError
from mpcbandit.serve.access import api_token, tls_context
from serve_support import DEADLINE_S, LiveService, serve_section
from tls_certs import CertAuthority


@pytest.fixture
def ca(tmp_path):
    return CertAuthority(tmp_path / "pki")


def _https(url: str, ca: CertAuthority, client=None) -> int:
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    if client is not None:
        context.load_cert_chain(*map(str, client))
    parts = urlsplit(url)
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=context,
                                       timeout=DEADLINE_S)
    try:
        conn.request("GET", "/v1/health")
        return conn.getresponse().status
    finally:
        conn.close()


def _plain(url: str) -> int:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=DEADLINE_S)
    try:
        conn.request("GET", "/v1/health")
        return conn.getresponse().status
    finally:
        conn.close()


def test_with_a_certificate_and_its_key_the_api_speaks_https_only(tmp_path, ca):
    cert, key = ca.issue("party", server=True)
    live = LiveService(tmp_path / "p.wal",
                       serve=serve_section(tls_cert=str(cert), tls_key=str(key)))
    try:
        assert live.url.startswith("https://")
        assert _https(live.url, ca) == 200
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            _plain(live.url.replace("https://", "http://"))
    finally:
        live.close()


def test_mutual_tls_takes_only_a_caller_whose_certificate_chains_to_the_ca(tmp_path, ca):
    cert, key = ca.issue("party", server=True)
    client = ca.issue("application", server=False)
    stranger = CertAuthority(tmp_path / "other", "another CA").issue("intruder", server=False)
    serve = serve_section(tls_cert=str(cert), tls_key=str(key), tls_client_ca=str(ca.cert_path))
    live = LiveService(tmp_path / "p.wal", serve=serve)
    try:
        assert _https(live.url, ca, client) == 200
        for who in (None, stranger):
            with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
                _https(live.url, ca, who)
    finally:
        live.close()


def test_mutual_tls_beyond_loopback_needs_no_token(ca):
    cert, key = ca.issue("party", server=True)
    serve = serve_section(bind="0.0.0.0", tls_cert=str(cert), tls_key=str(key),
                          tls_client_ca=str(ca.cert_path))
    assert api_token(serve) is None and tls_context(serve).verify_mode == ssl.CERT_REQUIRED


def test_a_tls_key_others_may_read_is_refused(ca):
    cert, key = ca.issue("party", server=True)
    key.chmod(0o644)
    with pytest.raises(SecurityError) as e:
        tls_context(serve_section(tls_cert=str(cert), tls_key=str(key)))
    assert "0644" in str(e.value) and str(key) in str(e.value)


def test_a_tls_key_in_a_folder_others_may_write_is_refused(ca):
    cert, key = ca.issue("party", server=True)
    key.parent.chmod(0o777)
    with pytest.raises(SecurityError) as e:
        tls_context(serve_section(tls_cert=str(cert), tls_key=str(key)))
    assert "writable by group or others" in str(e.value)


@pytest.mark.parametrize("given, named", [
    ({"tls_cert": "CERT"}, "serve.tls_key"),
    ({"tls_key": "KEY"}, "serve.tls_cert"),
    ({"tls_client_ca": "CA"}, "serve.tls_client_ca"),
    ({"tls_cert": "CA", "tls_key": "KEY"}, "serve.tls_cert"),  # a CA's cert with another key
])
def test_a_half_given_or_mismatched_tls_setting_is_named(ca, given, named):
    cert, key = ca.issue("party", server=True)
    paths = {"CERT": str(cert), "KEY": str(key), "CA": str(ca.cert_path)}
    with pytest.raises(ConfigError) as e:
        tls_context(serve_section(**{k: paths[v] for k, v in given.items()}))
    assert e.value.key == named


def test_an_api_beyond_loopback_without_tls_is_refused_unless_plain_http_is_asked_for(tmp_path):
    with pytest.raises(ConfigError) as e:
        tls_context(serve_section(bind="0.0.0.0"))
    assert e.value.key == "serve.tls_cert" and "--insecure-http" in e.value.reason
    assert tls_context(serve_section(bind="0.0.0.0", insecure_http=True)) is None
    assert tls_context(serve_section(bind="127.0.0.1")) is None  # loopback: this host only


def test_serve_insecure_http_flag_sets_the_setting(monkeypatch):
    from click.testing import CliRunner

    from mpcbandit.serve import command

    seen = {}
    monkeypatch.setattr(command, "_serve_one",
                        lambda *args: seen.setdefault("overrides", args[-1]))
    result = CliRunner().invoke(command.serve, ["hannun-synthetic", "--role", "dealer",
                                                "--index", "0", "--insecure-http"])
    assert result.exit_code == 0, result.output
    assert "serve.insecure_http=true" in seen["overrides"]
