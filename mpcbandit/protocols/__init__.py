"""Protocol registry and the context a party's protocol code runs in.

A protocol module defines ``PROTOCOL = Protocol(...)``: its config section, its party table,
what each role does (written against a Channel, never against zmq), a plaintext reference and
how per-party outputs become the summary. Register it in ``mpcbandit.registry.PROTOCOL_MODULES``.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mpcbandit.checkpoint import FINISHED, CheckpointStore, finished
from mpcbandit.config import Config, Party
from mpcbandit.data.folder import own_folders, party_folder
from mpcbandit.data.stray import warn_stray
from mpcbandit.errors import ConfigError, MpcBanditError
from mpcbandit.identity import identity_fields
from mpcbandit.net.channel import BUFFERED_MESSAGES_DEFAULT, Channel
from mpcbandit.progress_file import write_progress
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol
from mpcbandit.stop import check_stop

__all__ = ["Protocol", "PartyContext", "RoleNames", "get_protocol", "all_peers", "seeded_rng", "privacy_record",
           "with_steps", "run_timed", "progress_line", "clock", "read_folders",
           "served_parties", "deployed_parties", "deployed_party",
           "MIN_BUFFER_CAP", "MESSAGE_OVERHEAD"]

_log = logging.getLogger("mpcbandit.party")
#: seconds between progress lines in a party's log
_LOG_EVERY_S = 10.0
#: the least a party lets one peer have waiting: room for ordinary scheduling slack
MIN_BUFFER_CAP = 64 * 2**20
#: bytes a message carries beyond its arrays (envelope, tag, framing): an upper estimate
MESSAGE_OVERHEAD = 512


@dataclass(frozen=True)
class Protocol:
    """What the runtime needs to know about one protocol."""

    name: str
    paper: str
    section: type
    roles: Callable[[Any], list[tuple[str, int]]]
    run_role: Callable[["PartyContext"], dict]
    plaintext: Callable[[Config], dict]
    summarize: Callable[[Config, list[dict]], dict]
    peers: Callable[[Any, str, int], list[str]] | None = None
    #: whether its roles save state with ctx.checkpoint and continue with ctx.resume
    checkpoints: bool = False
    #: why it does not (said when --checkpoint-every or --resume is refused)
    no_checkpoints_because: str = "its roles do not save state"
    #: settings of its section that make a run not private, each as a sentence
    privacy_warnings: Callable[[Any], list[str]] | None = None
    #: the most bytes one peer may send a party before that party reads them (an upper
    #: estimate from the section's sizes); the default cap on unread bytes is twice this
    sends_ahead: Callable[[Any], int] | None = None
    #: replay(cfg, summary[, data_dir]): the non-private reference on what the secure run of
    #: that summary revealed at its end (Hannun's exploration key), for `run --plaintext
    #: --replay RUN_DIR`
    replay: Callable[..., dict] | None = None
    #: the lines `run` prints about a finished run's outcome, from its summary (the numbers
    #: a reader of this protocol looks for first)
    headline: Callable[[dict], list[str]] | None = None
    #: the section key that sets the number of bandit steps, and the fewest steps a run of
    #: this section may have (a duration probe runs a few more than that)
    steps: Callable[[Any], tuple[str, int]] | None = None
    #: prepare(cfg, role) reads what that role loads from disk (MNIST's principal components,
    #: ...) into this process's caches, before the hello: start-up is not timed as protocol time
    prepare: Callable[[Config, str], Any] | None = None
    #: sources(cfg, role, index, folder) -> the role's data source (mpcbandit/data): from the
    #: built-in task when folder is None, else from that party's own data folder; None for a
    #: role that reads no data. The role asks it for its inputs step by step (ctx.source()).
    sources: Callable[[Config, str, int, Path | None], Any] | None = None
    #: split(cfg, out, suffix) writes every party's data folder out/<role>.<index>/ from the
    #: built-in task (`mpcbandit data split`), tables in the format of suffix (.csv, ...)
    split: Callable[[Config, Path, str], None] | None = None
    #: the module that serves it online (`mpcbandit serve`, docs/serve.md), imported when
    #: first served: its SERVE table names the service's parties, their peers, what each
    #: one's API takes, its data source and its serve loop
    serve: str | None = None

    def buffer_cap(self, cfg: Config) -> int:
        """Unread bytes one peer may have waiting at a party: run.max_buffered_mb, else twice
        what the protocol sends ahead (at least MIN_BUFFER_CAP), else the channel's default."""
        if cfg.run.max_buffered_mb:
            return int(cfg.run.max_buffered_mb * 2**20)
        if self.sends_ahead is None:
            return BUFFERED_MESSAGES_DEFAULT * cfg.run.max_message_bytes
        return max(MIN_BUFFER_CAP, 2 * self.sends_ahead(cfg.section))

    def require_checkpoints(self) -> None:
        """Refuse checkpoint options for a protocol whose roles cannot checkpoint."""
        if not self.checkpoints:
            able = ", ".join(sorted(n for n in PROTOCOL_MODULES if get_protocol(n).checkpoints))
            raise MpcBanditError(f"protocol {self.name} cannot checkpoint or resume: "
                                 f"{self.no_checkpoints_because} (--checkpoint-every/--resume "
                                 f"refused; protocols that can: {able})")

    def served(self) -> dict:
        """The SERVE table of the module that serves this protocol, or an error naming those
        that can be served."""
        if self.serve is None:
            able = ", ".join(sorted(n for n in PROTOCOL_MODULES if get_protocol(n).serve))
            raise MpcBanditError(f"protocol {self.name} cannot be served yet (`mpcbandit "
                                 f"serve` serves: {able})")
        return importlib.import_module(self.serve).SERVE

    def source(self, cfg: Config, role: str, index: int, folder: Path | None) -> Any:
        """(role, index)'s data source: its own folder's, or the built-in task's (folder None)."""
        if self.sources is None:
            if folder is not None:
                raise MpcBanditError(f"protocol {self.name} reads no data: give it no --data")
            return None
        source = self.sources(cfg, role, index, None if folder is None else Path(folder))
        if folder is not None:
            warn_stray(Path(folder), f"{role}.{index}", lambda: self._readers(cfg))
        return source

    def _readers(self, cfg: Config) -> dict[str, list[str]]:
        """stem -> the parties whose folder takes that table, as `data split` lays them out (a
        split of a few steps, made only to name where a stray file belongs)."""
        import tempfile

        if self.split is None:
            return {}
        small = with_steps(cfg, self.steps(cfg.section)[1]) if self.steps else cfg
        takes: dict[str, list[str]] = {}
        with tempfile.TemporaryDirectory(prefix="mpcbandit-split-") as tmp:
            self.split(small, Path(tmp), ".csv")
            for folder in sorted(Path(tmp).iterdir()):
                for name in {f.name.split(".", 1)[0] for f in folder.iterdir()}:
                    takes.setdefault(name, []).append(folder.name)
        return takes

    def data_folders(self, data_dir: Path, parties: list[str]) -> Path:
        """data_dir (resolved), the parent of every party's folder data_dir/<party>: refused if
        this protocol reads no data, it is not a folder, or two parties' folders are one."""
        if self.sources is None:
            raise MpcBanditError(f"protocol {self.name} reads no data: give it no --data")
        data_dir = party_folder(Path(data_dir).resolve(), "--data")
        own_folders(data_dir, parties)
        return data_dir

    def reference(self, cfg: Config, data_dir: Path | None = None,
                  replay_of: dict | None = None) -> dict:
        """The plaintext reference's fields: on the built-in task, or on every party's folder
        under data_dir (one process reads all the data: the non-private reference); with
        replay_of (a secure run's summary), on what that run revealed at its end."""
        if data_dir is not None and self.sources is None:
            raise MpcBanditError(f"protocol {self.name} reads no data: give it no --data")
        data = () if data_dir is None else (Path(data_dir),)
        if replay_of is not None:
            return self.replay(cfg, replay_of, *data)
        return self.plaintext(cfg, *data)

    def peers_of(self, section: Any, role: str, index: int) -> list[str]:
        """Names of the parties that (role, index) exchanges messages with."""
        if self.peers is None:
            return all_peers(self.roles(section), role, index)
        return self.peers(section, role, index)


def all_peers(roles: list[tuple[str, int]], role: str, index: int) -> list[str]:
    """Every party but (role, index): the default when a protocol does not narrow it."""
    me = f"{role}.{index}"
    return [f"{r}.{i}" for r, i in roles if f"{r}.{i}" != me]


def served_parties(cfg: Config) -> list[str]:
    """The names of the parties of cfg's service (`mpcbandit serve`)."""
    return [f"{r}.{i}" for r, i in get_protocol(cfg.protocol).served()["roles"](cfg.section)]


def deployed_parties(cfg: Config, service: bool = False) -> list[Party]:
    """The parties of what is deployed, with their addresses: a batch run's (every party of
    cfg) or, with service, its service's (`mpcbandit serve`: Hannun's and O3M's have no
    environment, the world being the applications)."""
    parties = cfg.parties()
    if not service:
        return parties
    served = set(served_parties(cfg))
    return [p for p in parties if p.name in served]


def deployed_party(cfg: Config, role: str, index: int, service: bool = False) -> Party:
    """(role, index) of what is deployed (deployed_parties), or a ConfigError listing its
    parties."""
    parties = deployed_parties(cfg, service)
    for p in parties:
        if p.role == role and p.index == index:
            return p
    what = "this config's service" if service else "this config"
    raise ConfigError("--role/--index", f"no party {role}.{index} in {what} (parties: "
                                        f"{', '.join(p.name for p in parties)})")


def privacy_record(cfg: Config) -> dict:
    """Whether a run of cfg is private as deployed, and why not: the summary's `privacy`."""
    proto = get_protocol(cfg.protocol)
    warnings = list(proto.privacy_warnings(cfg.section)) if proto.privacy_warnings else []
    if cfg.run.security == "none":
        warnings.insert(0, "run.security = 'none': messages travel in clear and any local "
                           "process can pose as a party (tests on one machine only)")
    return {"private": not warnings, "warnings": warnings}


def with_steps(cfg: Config, steps: int) -> Config:
    """cfg with its protocol's step count set to steps, under whichever key the protocol counts
    them (Protocol.steps: iterations, budget, horizon): what `--steps N` does."""
    proto = get_protocol(cfg.protocol)
    if proto.steps is None:
        raise MpcBanditError(f"--steps: protocol {cfg.protocol} has no bandit steps to count; "
                             f"set its own keys with --set (`mpcbandit explain {cfg.protocol}`)")
    key, _ = proto.steps(cfg.section)
    return cfg.with_overrides([f"{cfg.protocol}.{key}={steps}"])


class RoleNames:
    """The name ("role.index") and protocol section of a context holding config, role, index."""

    @property
    def name(self) -> str:
        return f"{self.role}.{self.index}"

    @property
    def section(self) -> Any:
        return self.config.section


@dataclass
class PartyContext(RoleNames):
    """Everything a role function gets: its config, identity, channel and a progress hook."""

    config: Config
    role: str
    index: int
    chan: Channel
    progress_path: Path | None = None
    checkpoint_dir: Path | None = None
    checkpoint_every: int = 0
    resume_from: int | None = None
    run_id: str | None = None  # the run instance its checkpoints belong to (run.json's)
    data_dir: Path | None = None  # this party's own data folder (None: the built-in task)
    _source: Any = field(default=None, repr=False)
    _last_progress: float = field(default=0.0, repr=False)
    _last_log: float = field(default=0.0, repr=False)
    _started: float = field(default_factory=time.monotonic, repr=False)
    _first_iteration: int | None = field(default=None, repr=False)
    _last_iteration: int | None = field(default=None, repr=False)
    _last_at: float = field(default=0.0, repr=False)

    def rng(self, purpose: str) -> np.random.Generator:
        """A reproducible numpy generator for public or simulated data (never for secrets)."""
        return seeded_rng(self.config.seed, purpose)

    def source(self) -> Any:
        """This role's data source, asked for its inputs step by step: from its own data folder
        (data_dir) or the built-in task; the role does not know which."""
        if self._source is None:
            self._source = get_protocol(self.config.protocol).source(
                self.config, self.role, self.index, self.data_dir)
        return self._source

    def progress(self, iteration: int, total: int | None = None) -> None:
        """Report progress to the launcher and the log (rate-limited, cheap every iteration)."""
        check_stop()  # a SIGTERM stops the party between iterations
        now = time.monotonic()
        if self._first_iteration is None:
            self._first_iteration, self._started = iteration, now
        self._last_iteration, self._last_at = iteration, now
        if now - self._last_log >= _LOG_EVERY_S or (total and iteration == total):
            self._last_log = now
            _log.info("%s", progress_line(iteration - self._first_iteration, iteration, total,
                                          now - self._started))
        if self.progress_path is None or (now - self._last_progress < 0.25 and iteration != total):
            return
        self._last_progress = now
        write_progress(self.progress_path, iteration, total or 0, self.chan.stats.total().rounds)

    def timed_steps(self) -> dict | None:
        """The iterations between this party's first and last progress reports and their time."""
        # from the first report on: what came before it (set-up, the first step) is not a step's
        # time, and a duration estimate extends these to a run's steps (mpcbandit/estimate.py)
        if self._first_iteration is None or self._last_iteration == self._first_iteration:
            return None
        return {"first": self._first_iteration, "last": self._last_iteration,
                "seconds": self._last_at - self._started}

    def checkpoint(self, iteration: int, state: Any) -> None:
        """After `iteration` iterations, save this party's state when a checkpoint is due.

        State is what the party needs to go on (its shares, counters, histories, generator
        positions), never unused dealer material. `state` may be a function returning it,
        called only when a checkpoint is due.
        """
        if not self.checkpoint_every or iteration % self.checkpoint_every or self.checkpoint_dir is None:
            return
        # a party that only sends can run far ahead of the others, so it keeps every
        # checkpoint; the launcher prunes those older than the last one all parties share
        self._checkpoints().save(iteration, state() if callable(state) else state)

    def checkpoint_finished(self, state: Any = None) -> None:
        """Record that this party's part is done, or that its state is fixed from here on
        (when checkpointing): a resumed run gives it back this state, whatever the iteration
        it resumes from."""
        if self.checkpoint_every and self.checkpoint_dir is not None:
            self._checkpoints().save(FINISHED, state)

    def resume(self) -> tuple[int, Any] | None:
        """(iteration, state) to continue from when this run resumes, else None."""
        if self.resume_from is None:
            return None
        store = self._checkpoints()
        if not store.path(self.resume_from).exists() and finished(store.folder):
            return self.resume_from, store.load(FINISHED)
        return self.resume_from, store.load(self.resume_from)

    def _checkpoints(self) -> CheckpointStore:
        if self.checkpoint_dir is None:
            raise MpcBanditError(f"{self.name}: resuming needs a checkpoint folder")
        return CheckpointStore(self.checkpoint_dir, self.name,
                               identity_fields(self.config, addresses=False), self.run_id)


def run_timed(run_role: Callable[[PartyContext], dict], ctx: PartyContext) -> dict:
    """Run one role and return its record: identity, accounting per op, and its output."""
    ctx.chan.start_clock()
    t0 = time.perf_counter()
    output = run_role(ctx)
    wall = time.perf_counter() - t0
    return {"role": ctx.role, "index": ctx.index, "name": ctx.name,
            **ctx.chan.stats.total().to_dict(), "hops": ctx.chan.hops, "protocol_wall_s": wall,
            "resumed_from": ctx.resume_from,  # its counters cover the steps from there on
            "by_op": ctx.chan.stats.to_dict(), "timed_steps": ctx.timed_steps(), "output": output,
            # never the folder's path (local), only that the party read its own
            **({"data": "own folder"} if ctx.data_dir is not None else {})}


def read_folders(results: list[dict]) -> bool:
    """Whether a run's parties read their own data folders (their results say `data`): then
    its summary cannot recompute what needs the data (a replay), which stays private."""
    return any(r.get("data") for r in results)


def progress_line(done: int, iteration: int, total: int | None, elapsed_s: float) -> str:
    """'iteration i/N, r it/s, elapsed e, ETA t': done iterations took elapsed_s (no rate
    before any iteration was timed: start-up is not a rate)."""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if done <= 0:
        return f"iteration {iteration}/{total or '?'}, elapsed {clock(elapsed_s)}"
    line = f"iteration {iteration}/{total or '?'}, {rate:.3g} it/s, elapsed {clock(elapsed_s)}"
    if total and rate > 0 and iteration < total:
        line += f", ETA {clock((total - iteration) / rate)}"
    return line


def clock(seconds: float) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour."""
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def seeded_rng(seed: int, purpose: str) -> np.random.Generator:
    """numpy generator for (seed, purpose): same on every party, independent across purposes."""
    digest = hashlib.sha256(f"{seed}/{purpose}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))
