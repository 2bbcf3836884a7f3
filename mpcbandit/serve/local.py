"""`mpcbandit serve CONFIG --out DIR`: every party of a service as a long-running process on
this host (the machinery of `mpcbandit run`'s launcher: ports, keys, spawning), each its own
state folder DIR/<party>/ and log DIR/logs/<party>.log; DIR/endpoints.json maps each party to
its API's URL. SIGTERM or Ctrl-C drains every party; `mpcbandit serve --resume --out DIR`
starts them all again from their logs and checkpoints.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.errors import MpcBanditError
from mpcbandit.files import RunLock, make_private_dir, write_json
from mpcbandit.local_procs import cpu_s, local_network, spawn, stop_all
from mpcbandit.registry import get_protocol
from mpcbandit.serve import DRAIN_MARGIN_S
from mpcbandit.serve.record import SERVICE_FILE, read_service

__all__ = ["serve_local", "ENDPOINTS", "SERVICE_FILE"]

ENDPOINTS = "endpoints.json"
_POLL_S = 0.1


#: a party's start may take this many times run.startup_s in all while it keeps progressing
STARTUP_CAP = 5.0


def _service_parties(cfg: Config) -> list[tuple[str, int]]:
    return get_protocol(cfg.protocol).served()["roles"](cfg.section)


def _wait_listening(procs: dict, urls: dict[str, Path], startup_s: float) -> dict[str, str]:
    """Every party's URL once each listens. A party on a busy machine may be scheduled late and
    import slowly: its run.startup_s counts from the last moment it made progress (used CPU),
    up to STARTUP_CAP times it in all; one that is late is named with what it used and the
    machine's load."""
    start = time.monotonic()
    moved = dict.fromkeys(procs, start)
    used = {n: cpu_s(p.pid) for n, p in procs.items()}
    while True:
        dead = {n: p.returncode for n, p in procs.items() if p.poll() is not None}
        if dead:
            raise MpcBanditError(f"party {', '.join(dead)} exited before listening (see its log)")
        if all(f.exists() for f in urls.values()):
            return {n: f.read_text() for n, f in urls.items()}
        now = time.monotonic()
        late = []
        for name, f in urls.items():
            if f.exists():
                continue
            cpu = cpu_s(procs[name].pid)
            if cpu is not None and cpu != used[name]:
                used[name], moved[name] = cpu, now
            if now - moved[name] > startup_s or now - start > STARTUP_CAP * startup_s:
                late.append(f"{name} ({used[name] or 0:.1f} CPU-s in {now - start:.0f} s, "
                            f"none for the last {now - moved[name]:.0f} s)")
        if late:
            raise MpcBanditError(
                f"party {', '.join(late)} not listening within run.startup_s = {startup_s:g} s "
                f"of its last progress (or {STARTUP_CAP:g} times it in all); load average "
                f"{os.getloadavg()[0]:.1f}: a party that used little CPU waited for the "
                "machine (give run.startup_s more), one that used much is stuck (see its log)")
        time.sleep(_POLL_S)


def serve_local(cfg: Config | None, out_dir: Path, *, resume: bool = False,
                data_dir: Path | None = None, insecure: bool = False, log_level: str = "INFO",
                echo=print) -> int:
    """Start every party of cfg's service (or resume the one in out_dir), write the endpoints,
    watch them until SIGTERM/SIGINT, then drain them all; the exit status (0: every party
    drained cleanly)."""
    out_dir = Path(out_dir)
    if cfg is not None:
        _service_parties(cfg)   # a protocol that cannot be served is refused before any write
    with RunLock(out_dir):
        if resume:
            cfg, meta = read_service(out_dir)
        else:
            meta = {"serve": True, "config": str(Path(cfg.source).resolve()),
                    "overrides": list(cfg.overrides), "run_id": secrets.token_hex(16),
                    "insecure": insecure, "data": data_dir and str(Path(data_dir).resolve())}
        parties = _service_parties(cfg)
        if meta.get("data"):  # checked as `run --data` is: no two parties read one folder
            get_protocol(cfg.protocol).data_folders(Path(meta["data"]),
                                                    [f"{r}.{i}" for r, i in parties])
        if not resume:
            write_json(out_dir / SERVICE_FILE, meta)
        cfg = local_network(cfg, out_dir, keys=not resume)
        make_private_dir(out_dir / "logs")
        session = secrets.token_hex(8)
        procs, urls = {}, {}
        try:
            for k, (role, index) in enumerate(parties):
                name = f"{role}.{index}"
                state = make_private_dir(out_dir / name)
                urls[name] = state / "url"
                urls[name].unlink(missing_ok=True)
                cmd = [sys.executable, "-m", "mpcbandit", "serve", cfg.source, "--role", role,
                       "--index", str(index), "--state", str(state), "--session", session,
                       "--url-file", str(urls[name]), "--log-level", log_level]
                for o in cfg.overrides:
                    cmd += ["--set", o]
                if cfg.serve.port:  # one port each, from the configured one on
                    cmd += ["--set", f"serve.port={cfg.serve.port + k}"]
                cmd += ["--resume"] if resume else ["--run-id", meta["run_id"]]
                if meta.get("insecure"):
                    cmd.append("--insecure")
                if meta.get("data"):
                    cmd += ["--data", str(Path(meta["data"]) / name)]
                procs[name] = spawn(cmd, out_dir / "logs" / f"{name}.log", append=True)
            endpoints = _wait_listening(procs, urls, cfg.run.startup_s)
            write_json(out_dir / ENDPOINTS, endpoints)
            echo(f"[mpcbandit] {'resumed' if resume else 'serving'} {cfg.protocol}: "
                 f"{len(procs)} parties; their APIs (also in {out_dir / ENDPOINTS}):")
            for name, url in endpoints.items():
                echo(f"  {name:<18} {url}")
            echo("[mpcbandit] stop with Ctrl-C or SIGTERM (every party drains); continue "
                 f"later with `mpcbandit serve --resume --out {out_dir}`")
            return _supervise(procs, cfg, out_dir, echo)
        except BaseException:
            stop_all(procs)
            raise


def _said_at_stop(state: Path, since: float) -> str | None:
    """What a party said of this stop in its result.json (Hannun's dealer: what it revealed
    of its exploration keys), if it wrote one since `since`."""
    path = state / "result.json"
    try:
        if path.stat().st_mtime < since:
            return None   # an earlier stop's
        said = json.loads(path.read_text()).get("said")
    except (OSError, ValueError, AttributeError):
        return None
    return said if isinstance(said, str) else None


def _supervise(procs: dict, cfg: Config, out_dir: Path, echo) -> int:
    """Watch the parties until told to stop; say which one exits meanwhile; drain them all."""
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, _frame: stopping.append(signum))
    told: set[str] = set()
    while not stopping:
        for name, p in procs.items():
            if p.poll() is not None and name not in told:
                told.add(name)
                echo(f"[mpcbandit] party {name} exited (code {p.returncode}; log "
                     f"{out_dir / 'logs' / (name + '.log')}): the others keep their APIs up "
                     "and report it; stop the service and resume it to go on")
        if len(told) == len(procs):
            break
        time.sleep(_POLL_S)
    echo("[mpcbandit] stopping: every party finishes its open batches and checkpoints")
    stopped_at = time.time()
    stop_all(procs, grace_s=cfg.serve.decision_timeout_s + DRAIN_MARGIN_S + 5.0)
    failed = {n: p.returncode for n, p in procs.items() if p.returncode != 0}
    for name in procs:
        if name not in failed and (said := _said_at_stop(out_dir / name, stopped_at)):
            echo(f"[mpcbandit] {name}: {said}")
    if failed:
        echo(f"[mpcbandit] not every party stopped cleanly: {failed}")
    return 1 if failed else 0
