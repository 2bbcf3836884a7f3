"""One party of a service (`mpcbandit serve CONFIG --role R --index I`, docs/serve.md): the
shell's HTTP API in the main thread (asyncio, SIGTERM) and the protocol's serve loop in
another, bridged by the backend (mpcbandit/serve/loop.PartyBackend). The same keys,
roster and hello as `mpcbandit party`; its state (request log, op log, checkpoints) lives in
its own folder."""

from __future__ import annotations

import logging
from pathlib import Path

from mpcbandit.checkpoint import state_seal
from mpcbandit.config import Config
from mpcbandit.errors import ConfigError, MpcBanditError, PeerTimeout
from mpcbandit.files import RunLock, write_json, write_private
from mpcbandit.identity import identity_fields
from mpcbandit.protocols import get_protocol, served_parties
from mpcbandit.serve.loop import PartyBackend, ServeContext, ServeState
from mpcbandit.serve.record import STATE_FILE, party_record
from mpcbandit.serve.server import run_service
from mpcbandit.serve.wal import WriteAheadLog
from parties import (check_peers, check_security_mode, open_channel, open_link, party_curve,
                     party_greeting, read_greetings)

__all__ = ["run_serve_party", "service_greeting", "STATE_FILE"]

log = logging.getLogger("mpcbandit.party")

#: one attempt of the hello: a party of a service waits for its peers until it is stopped
_HELLO_TRY_S = 2.0


def _claim_state(folder: Path, name: str, run_id: str | None, resume: bool) -> str:
    """The service's run id, from --run-id (a new service) or the folder (--resume). A new
    service's request log is made before its record, so a resume can tell a log lost."""
    record, request_log = folder / STATE_FILE, ServeState.wal_path_in(folder)
    if not resume:
        if record.exists():
            raise MpcBanditError(f"{folder} holds the state of a service ({record}): continue "
                                 "it with --resume, or give another --state")
        left = ServeState.leftovers(folder)
        if left:
            raise MpcBanditError(f"{folder} holds a service's {', '.join(left)} but no "
                                 f"{STATE_FILE}: a new service would start over them; restore "
                                 f"{record} to resume it, or give another --state")
        if not run_id:
            raise MpcBanditError("a new service needs --run-id ID: one new id for the whole "
                                 "service, the same at every party (checkpoints are bound to "
                                 "it)")
        WriteAheadLog(request_log).close()
        write_json(record, {"party": name, "run_id": run_id})
        return run_id
    kept = party_record(folder, "resume")
    if kept is None:
        raise MpcBanditError(f"{folder} holds no service to resume (no {STATE_FILE})")
    party, kept = kept
    if party != name:
        raise MpcBanditError(f"{folder} is the state of {party}, not of {name}")
    if run_id and run_id != kept:
        raise MpcBanditError(f"--run-id {run_id} differs from the service's {kept} ({record})")
    if not request_log.exists():
        raise MpcBanditError(f"{request_log} is missing: {folder} holds a service ({record}) "
                             "but not its request log, so every request this party "
                             "acknowledged would be lost; restore the file from a copy, or "
                             "start a new service in another folder")
    return kept


def service_greeting(cfg: Config, source, run_id: str):
    """A service party's hello: a batch party's, and the service's run id, so that a state
    folder of another service is refused by name in the hello, checkpoints or none."""
    return party_greeting(cfg, source, {"service.run_id": run_id})


def run_serve_party(cfg: Config, role: str, index: int, *, state_dir: Path, session: str,
                    run_id: str | None = None, resume: bool = False, insecure: bool = False,
                    data_dir: Path | None = None, url_file: Path | None = None) -> int:
    """Serve one party until SIGTERM; the exit status (0 once drained)."""
    check_security_mode(cfg, insecure)
    proto = get_protocol(cfg.protocol)
    served = proto.served()
    name = f"{role}.{index}"
    names = served_parties(cfg)
    if name not in names:
        raise ConfigError("--role/--index", f"no party {name} in this service (parties: "
                                            f"{', '.join(names)})")
    state_dir = Path(state_dir)
    with RunLock(state_dir):
        run_id = _claim_state(state_dir, name, run_id, resume)
        peers = served["peers"](cfg.section, role, index)
        curve = party_curve(cfg, name, peers)
        source = served["source"](cfg, role, index, data_dir)
        # checkpoints sealed under a key of the CURVE secret key, which is not in state_dir:
        # a copy of the folder holds no unrevealed key nor block of a mask in clear
        seal = curve and state_seal(curve.keypair.secret, name, run_id)
        state = ServeState(state_dir, name, identity_fields(cfg, addresses=False), run_id, seal)
        cap = proto.buffer_cap(cfg)

        def connect(backend: PartyBackend):
            link = open_link(cfg, name, peers, curve)
            mine, wire = service_greeting(cfg, source, run_id)
            while True:
                try:
                    greetings = link.hello(_HELLO_TRY_S, wire, max_pending_bytes=cap)
                    break
                except PeerTimeout:
                    if backend.stopping.is_set():
                        link.close(0)
                        return None
                    backend.waiting_for(link.not_greeted())
                except BaseException:
                    link.close(0)
                    raise
            theirs = read_greetings(greetings)
            chan = open_channel(cfg, name, peers, link, session, mine, theirs, cap)
            try:
                check_peers(mine, theirs)
            except BaseException as e:
                chan.abort(e)
                chan.close(1.0)
                raise
            return chan

        def context(chan, port, backend):
            return ServeContext(cfg, role, index, chan, port, state, source, backend)

        def listening(url: str) -> None:
            if url_file is not None:
                write_private(url_file, url)

        backend = PartyBackend(name, peers, connect, served["run_role"], context)
        return run_service(cfg.serve, served["service_role"](cfg, role, index), backend,
                           state.wal_path, listening)
