"""Role entry points: build a party's transport from the config, run its protocol part,
write its result. No maths here."""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.errors import ConfigError, DataError, PeerTimeout
from mpcbandit.files import make_private_dir, write_json
from mpcbandit.identity import config_digest, identity_fields
from mpcbandit.net.handshake import (Greeting, check_same_run, link_sessions, make_greeting,
                                     read_greeting)
from mpcbandit.net.channel import Channel
from mpcbandit.net.security import is_loopback, load_curve
from mpcbandit.net.zmq_link import ZmqLink, raise_file_limit
from mpcbandit.protocols import PartyContext, get_protocol, run_timed

__all__ = ["run_party", "check_security_mode", "party_curve", "open_link", "party_greeting",
           "read_greetings", "open_channel", "check_peers"]

log = logging.getLogger("mpcbandit.party")
#: seconds a failing party gives its abort messages to leave
_ABORT_LINGER_S = 1.0
#: how long a party whose data is refused waits for its peers' hello to tell them why, counted
#: from its own hello and again from each peer's: the peers starting beside it learn at once,
#: and it ends with its DataError instead of waiting run.startup_s for peers not started
_REFUSED_HELLO_S = 5.0


def _bind_address(cfg: Config, address: str, name: str) -> str:
    port = address.rpartition(":")[2]
    if port == "0":
        raise ConfigError("network.base_port", f"party {name} has no port: set network.base_port "
                          "or network.addresses (only `mpcbandit run` picks ports itself)")
    return f"tcp://*:{port}" if cfg.network.bind == "any" else address


def check_security_mode(cfg: Config, insecure: bool) -> None:
    """Refuse security = 'none' beyond loopback unless the operator said --insecure."""
    if cfg.run.security != "none" or insecure:
        return
    remote = [p.name for p in cfg.parties() if not is_loopback(p.address)]
    if remote:
        raise ConfigError("run.security", f"'none' sends shares and keys in clear and lets anyone "
                          f"pose as a party; it runs only when every party is on loopback "
                          f"({', '.join(remote[:3])} {'is' if len(remote) == 1 else 'are'} not), "
                          "or with --insecure")


def _open_source(proto, cfg: Config, role: str, index: int, data_dir: Path | None):
    """(the role's data source, None) or (None, the DataError that refuses it): the error is
    raised after the hello, so that the peers hear of it at once instead of waiting for us."""
    try:
        return proto.source(cfg, role, index, data_dir), None
    except DataError as e:
        log.error("%s", e)
        return None, e


def _greet_refused(cfg: Config, link: ZmqLink, wire: bytes, cap: int) -> dict | None:
    """The peers' greetings, for a party whose data is refused to tell them why; None once no
    peer greeted for _REFUSED_HELLO_S (within run.startup_s): it does not wait out a deadline
    for peers that are not there (they will name it as silent)."""
    end = time.monotonic() + cfg.run.startup_s
    while True:
        waiting = link.not_greeted()
        try:
            left = max(0.0, min(_REFUSED_HELLO_S, end - time.monotonic()))
            return read_greetings(link.hello(left, wire, max_pending_bytes=cap))
        except PeerTimeout:
            if link.not_greeted() == waiting or time.monotonic() >= end:
                log.error("no hello from %s within %g s: not told why this party stops",
                          ", ".join(link.not_greeted()), _REFUSED_HELLO_S)
                return None


def party_curve(cfg: Config, name: str, peer_names: list[str]):
    """This party's CURVE set-up (its key, its peers' keys), or None without security."""
    return load_curve(cfg.run.keys_dir, name, peer_names) if cfg.run.security == "curve" else None


def open_link(cfg: Config, name: str, peer_names: list[str], curve) -> ZmqLink:
    """This party's link: its ROUTER bound, a DEALER to each peer (not greeted yet)."""
    me = next(p for p in cfg.parties() if p.name == name)
    address_of = {p.name: p.address for p in cfg.parties()}
    raise_file_limit()  # every peer connection and every stray one takes a descriptor
    return ZmqLink(me.name, _bind_address(cfg, me.address, me.name),
                   {p: address_of[p] for p in peer_names},
                   max_bytes=cfg.run.max_message_bytes, linger_s=min(2.0, cfg.run.deadline_s),
                   curve=curve, send_timeout_s=cfg.run.deadline_s)


def party_greeting(cfg: Config, source, extra: dict | None = None) -> tuple[Greeting, bytes]:
    """What this party says in the hello (config digest, identity, its data's id list, and
    `extra`: a service's run id): the greeting and its wire form. Made once per link: a
    repeated hello repeats the same nonce."""
    agreement = getattr(source, "agreement", None) or {}
    return make_greeting(config_digest(cfg), identity_fields(cfg) | agreement | (extra or {}))


def read_greetings(greetings: dict[str, bytes]) -> dict[str, Greeting]:
    """The peers' hellos, checked as greetings."""
    return {p: read_greeting(p, raw) for p, raw in greetings.items()}


def open_channel(cfg: Config, name: str, peer_names: list[str], link: ZmqLink, session: str,
                 mine: Greeting, theirs: dict[str, Greeting], cap: int) -> Channel:
    """The channel over a greeted link: each link's session from the hello's nonces."""
    return Channel(name, peer_names, link, session=session, deadline_s=cfg.run.deadline_s,
                   max_bytes=cfg.run.max_message_bytes, net=cfg.net, max_buffered_bytes=cap,
                   link_sessions=link_sessions(session, name, mine, theirs))


def check_peers(mine: Greeting, theirs: dict[str, Greeting]) -> None:
    """Refuse a peer of another run (config, identity, data): named with what differs."""
    for peer, greeting in theirs.items():
        check_same_run(peer, mine, greeting)


def run_party(cfg: Config, role: str, index: int, *, session: str,
              result_path: Path | None = None, progress_path: Path | None = None,
              checkpoint_dir: Path | None = None, checkpoint_every: int = 0,
              resume_from: int | None = None, insecure: bool = False,
              run_id: str | None = None, data_dir: Path | None = None) -> dict:
    """Run one party of cfg to completion and return (and optionally write) its result.

    data_dir: this party's own data folder (its role's files, docs/data.md), read and checked
    before the hello; without it the role reads the built-in task."""
    check_security_mode(cfg, insecure)
    proto = get_protocol(cfg.protocol)
    if checkpoint_every or resume_from is not None:
        proto.require_checkpoints()
    me = cfg.party(role, index)
    if result_path is not None:
        make_private_dir(result_path.parent)  # fail before the protocol, not after it
    peer_names = proto.peers_of(cfg.section, role, index)
    curve = party_curve(cfg, me.name, peer_names)
    log.info("protocol %s, seed %d: binding %s, peers %s, security %s", cfg.protocol,
             cfg.seed, _bind_address(cfg, me.address, me.name), ", ".join(peer_names) or "none",
             cfg.run.security)
    if proto.prepare is not None and data_dir is None:
        proto.prepare(cfg, role)
    source, data_error = _open_source(proto, cfg, role, index, data_dir)
    link = open_link(cfg, me.name, peer_names, curve)
    cap = proto.buffer_cap(cfg)
    try:
        mine, wire = party_greeting(cfg, source)
        if data_error is None:
            theirs = read_greetings(link.hello(cfg.run.startup_s, wire, max_pending_bytes=cap))
        else:
            theirs = _greet_refused(cfg, link, wire, cap)
    except BaseException:
        link.close()
        raise
    if theirs is None:  # no channel to tell anyone: the DataError is the party's last word
        link.close(0)
        raise data_error
    chan = open_channel(cfg, me.name, peer_names, link, session, mine, theirs, cap)
    try:
        if data_error is not None:  # raised here, where every peer is told at once
            raise data_error
        check_peers(mine, theirs)
        ctx = PartyContext(config=cfg, role=role, index=index, chan=chan,
                           progress_path=progress_path, checkpoint_dir=checkpoint_dir,
                           checkpoint_every=checkpoint_every, resume_from=resume_from,
                           run_id=run_id, data_dir=data_dir, _source=source)
        log.info("protocol %s started", cfg.protocol)
        record = run_timed(proto.run_role, ctx)
        close_s = chan.finish()
    except BaseException as e:
        # peers learn at once where the run failed and why, instead of waiting out a deadline
        log.error("failed: %s; telling every peer", e if str(e) else type(e).__name__)
        chan.abort(e)
        chan.close(_ABORT_LINGER_S)
        raise
    chan.close()
    log.info("done in %.2f s: %d rounds, %d bytes sent, %d received; every peer read all it "
             "was sent (%.3f s)", record["protocol_wall_s"], record["rounds"],
             record["bytes_sent"], record["bytes_received"], close_s)
    result = {**record, "close_s": close_s, "control_messages": chan.control_messages,
              "pid": os.getpid(), "host": socket.gethostname(), "address": me.address,
              # what `collect` checks: every result of a run saw the same nonces in the hello
              "run": {"digest": mine.digest, "session": session, "nonce": mine.nonce.hex(),
                      "peer_nonces": {p: g.nonce.hex() for p, g in sorted(theirs.items())}}}
    if result_path is not None:
        write_json(result_path, result)
    return result
