"""Who may call a party's API: anyone on this machine while it listens on loopback; beyond
it, only a caller holding the bearer token read from a private file (serve.token_file), or one
whose certificate chains to serve.tls_client_ca (mutual TLS). With serve.tls_cert and
serve.tls_key the API speaks HTTPS only."""

from __future__ import annotations

import hmac
import os
import ssl
import stat
from pathlib import Path

from mpcbandit.config import ServeSection
from mpcbandit.errors import ConfigError
from mpcbandit.net.security import SecurityError, is_loopback, refuse_unsafe_path

__all__ = ["api_token", "bearer_matches", "tls_context", "MIN_TOKEN_CHARS"]

#: a token shorter than this is guessable: 32 hex digits are 128 bits
MIN_TOKEN_CHARS = 32


def api_token(serve: ServeSection) -> str | None:
    """The token every request must carry (None: loopback without a token file).

    Binding beyond loopback without serve.token_file is refused, naming the option; the file
    must be a regular file of this user's (or root's) that no one else may read or write, in
    folders no one else may write (checked as the secret keys are).
    """
    if not serve.token_file:
        if is_loopback(f"tcp://{serve.bind}:0") or serve.tls_client_ca:
            return None  # loopback, or every caller proves itself by certificate
        raise ConfigError("serve.token_file", f"serve.bind = {serve.bind!r} is not a loopback "
                          "address: the API would answer anyone who reaches this host; give a "
                          "file (mode 0600) holding a bearer token of at least "
                          f"{MIN_TOKEN_CHARS} characters (e.g. `openssl rand -hex 32 > FILE`), "
                          "or bind 127.0.0.1")
    path = Path(serve.token_file)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer (a regular file ignores it)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as e:
        raise ConfigError("serve.token_file", f"cannot open {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        raw = os.read(fd, 4096) if stat.S_ISREG(st.st_mode) else b""
    finally:
        os.close(fd)
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISREG(st.st_mode):
        raise SecurityError(f"token file {path} is not a regular file")
    if st.st_uid not in (0, os.geteuid()):
        raise SecurityError(f"token file {path} belongs to uid {st.st_uid}, neither you nor "
                            "root, who could change it")
    if mode & 0o077:
        raise SecurityError(f"token file {path} is open to group or others (mode {mode:04o}): "
                            f"anyone who reads it may call the API; fix with: chmod 600 {path}")
    refuse_unsafe_path(path, "token file", key="serve.token_file")
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ConfigError("serve.token_file", f"{path} is not ASCII text") from None
    if len(token) < MIN_TOKEN_CHARS or not token.isprintable() or " " in token:
        raise ConfigError("serve.token_file", f"{path} holds {len(token)} characters: a token "
                          f"is one word of at least {MIN_TOKEN_CHARS} printable characters")
    return token


def bearer_matches(header: str | None, token: str) -> bool:
    """Whether an Authorization header carries exactly this bearer token (constant time)."""
    scheme, _, given = (header or "").partition(" ")
    if not given.isascii():  # a token is ASCII: anything else is a wrong one, never a 500
        return False
    # compare_digest's time depends only on the lengths, never on where the bytes differ
    return (scheme.lower() == "bearer"
            and hmac.compare_digest(given.strip().encode(), token.encode()))


def tls_context(serve: ServeSection) -> ssl.SSLContext | None:
    """The API's TLS context (None: plain HTTP): serve.tls_cert and serve.tls_key, checked as
    the secret keys are, and with serve.tls_client_ca every caller must show a certificate that
    chains to it. TLS 1.2 at least."""
    given = {k: getattr(serve, k) for k in ("tls_cert", "tls_key", "tls_client_ca")}
    if not serve.tls_cert and not serve.tls_key:
        if serve.tls_client_ca:
            raise ConfigError("serve.tls_client_ca", "mutual TLS needs serve.tls_cert and "
                                                     "serve.tls_key (the API's own certificate)")
        if not serve.insecure_http and not is_loopback(f"tcp://{serve.bind}:0"):
            raise ConfigError("serve.tls_cert", f"serve.bind = {serve.bind!r} is not a loopback "
                              "address: the API's token and requests would cross the network in "
                              "clear; give serve.tls_cert and serve.tls_key (docs/serve-tls.md), "
                              "or --insecure-http (serve.insecure_http = true) behind your own "
                              "TLS proxy or on a private network")
        return None
    for key in ("tls_cert", "tls_key"):
        if not given[key]:
            raise ConfigError(f"serve.{key}", "give serve.tls_cert and serve.tls_key together")
    for key, value in given.items():
        if value:
            if not Path(value).exists():
                raise ConfigError(f"serve.{key}", f"{value} does not exist")
            refuse_unsafe_path(Path(value), key.replace("_", " "), key=f"serve.{key}")
    mode = stat.S_IMODE(os.stat(serve.tls_key).st_mode)
    if mode & 0o077:
        raise SecurityError(f"tls key {serve.tls_key} is open to group or others (mode "
                            f"{mode:04o}): fix with: chmod 600 {serve.tls_key}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(serve.tls_cert, serve.tls_key)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ConfigError("serve.tls_cert", f"{serve.tls_cert} with {serve.tls_key}: not a PEM "
                                            f"certificate and its key ({e})") from None
    if serve.tls_client_ca:
        try:
            context.load_verify_locations(serve.tls_client_ca)
        except (ssl.SSLError, OSError, ValueError) as e:
            raise ConfigError("serve.tls_client_ca", f"{serve.tls_client_ca}: not PEM CA "
                                                     f"certificates ({e})") from None
        context.verify_mode = ssl.CERT_REQUIRED
    return context
