"""What every party of a service (`mpcbandit serve`, docs/serve.md) runs around its protocol's
batches, whatever the protocol: its state folder, the backend that bridges the shell's
thread(s) and the protocol's, and the sequencing in which one party (the leader: Hannun's p')
orders every op and the others follow.

The leader numbers the ops (1, 2, ...) and writes each to its op log before the op's result
can be known anywhere; every ``checkpoint_every`` ops all parties save their state together
(the leader waits for every follower's acknowledgement), so their last checkpoints differ by
at most one and each keeps its last two. A resumed service agrees on the last op every party
checkpointed, and the leader replays the op log from there.

Messages (labels): OPS, the leader's ops to its followers; UP, a follower's words to the
leader (its checkpoints at the start, an acknowledgement, notices, leaving); a protocol may add
its own (Hannun's HAVE).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from mpcbandit.bodies import expect_field
from mpcbandit.checkpoint import CheckpointStore, checkpoint_iterations
from mpcbandit.config import Config
from mpcbandit.errors import DataError, PeerAborted, PeerTimeout, ProtocolError
from mpcbandit.protocols import RoleNames
from mpcbandit.serve.wal import WriteAheadLog

__all__ = ["OPS", "UP", "POLL_S", "ServeState", "ServeContext", "PartyBackend", "Follower",
           "OpLog", "agree_resume", "tick_s", "durable"]

log = logging.getLogger("mpcbandit.serve")

OPS, UP = "serve.ops", "serve.up"
#: how long a party's loop waits on one source (its queue, the channel) before looking at
#: the other: a reward's notice, a leave request wait at most this long
POLL_S = 0.02
#: checkpoints each party keeps: a resume goes back at most to the one before the last
KEEP_CHECKPOINTS = 2
#: the longest a record of the op log may take to reach the disk
DURABLE_S = 10.0
#: refusals the leader remembers for the shell's 503s
REFUSALS = 4096


def tick_s(cfg: Config) -> float:
    """How often an idle leader tells its followers it is alive (they give up after a
    deadline without a word)."""
    return min(5.0, cfg.run.deadline_s / 4)


def durable(fut: Future) -> None:
    """Wait until a log record is on disk (at most DURABLE_S); its write error is raised."""
    fut.result(DURABLE_S)


class ServeState:
    """A party's state folder: the shell's request log, the leader's op log, the checkpoints
    (bound to the run id and authenticated, mpcbandit/checkpoint.py), a revealed result."""

    WAL, OPLOG, CHECKPOINTS = "requests.wal", "ops.wal", "checkpoints"

    def __init__(self, folder: Path, party: str, identity: dict, run_id: str,
                 seal: bytes | None = None):
        """seal: the key that encrypts the checkpoints (checkpoint.state_seal), None: clear."""
        self.folder = Path(folder)
        self.store = CheckpointStore(self.folder / self.CHECKPOINTS, party, identity, run_id,
                                     seal)

    @classmethod
    def wal_path_in(cls, folder: Path) -> Path:
        """The request log of the state folder `folder`."""
        return Path(folder) / cls.WAL

    @classmethod
    def leftovers(cls, folder: Path) -> list[str]:
        """What of a service the folder holds: a request log with records, an op log,
        checkpoints (none in a new service's folder)."""
        folder = Path(folder)
        left = [name for name in (cls.WAL, cls.OPLOG)
                if (folder / name).exists() and (folder / name).stat().st_size > 0]
        if (folder / cls.CHECKPOINTS).is_dir() and any((folder / cls.CHECKPOINTS).iterdir()):
            left.append(cls.CHECKPOINTS)
        return left

    @property
    def wal_path(self) -> Path:
        """The shell's write-ahead log of this party's requests."""
        return self.wal_path_in(self.folder)

    @property
    def oplog_path(self) -> Path:
        """The leader's log of ops."""
        return self.folder / self.OPLOG

    @property
    def result_path(self) -> Path:
        """What the party reveals when the service stops (the dealer's exploration keys)."""
        return self.folder / "result.json"

    def saved(self) -> list[int]:
        """The ops after which this party holds a checkpoint (ascending)."""
        return checkpoint_iterations(self.store.folder) if self.store.folder.exists() else []

    def save(self, n: int, state: Any) -> None:
        """Checkpoint the state after op n; keep only the last KEEP_CHECKPOINTS."""
        self.store.save(n, state)
        for old in self.saved()[:-KEEP_CHECKPOINTS]:
            self.store.path(old).unlink(missing_ok=True)

    def load(self, n: int) -> Any:
        """The state checkpointed after op n (checked: this party's, of this run)."""
        return self.store.load(n)


@dataclass
class ServeContext(RoleNames):
    """What a role's serve loop gets: its config and name, its channel, the shell's port, its
    state folder, its data source and the backend (whose ``stopping`` says SIGTERM came)."""

    config: Config
    role: str
    index: int
    chan: Any
    port: Any
    state: ServeState
    source: Any
    backend: "PartyBackend"

    @property
    def stopping(self) -> bool:
        """This party was told to stop (SIGTERM: the shell drains)."""
        return self.backend.stopping.is_set()


def _blamed(error: BaseException) -> str | None:
    """The party an error names: the one gone or silent, the one where a run failed first."""
    if isinstance(error, PeerAborted):
        return error.party
    return getattr(error, "peer", None)


class PartyBackend:
    """The shell's backend for one party of a service (mpcbandit/serve/backend.py): the
    protocol runs in a thread of its own, started by ``start``; it joins its peers
    (``connect``, which greets them and returns the channel), runs the role's loop
    (``run_role``, which returns the party that ended the service, or None when this one
    stopped) and reports what it sees to the shell. A peer that dies or leaves ends the
    party's protocol: the party keeps its API up, says so in /v1/health and answers decisions
    503 naming that peer, until every party is started again with --resume."""

    def __init__(self, name: str, peers: list[str], connect: Callable, run_role: Callable,
                 make_context: Callable):
        self.name, self.peers = name, list(peers)
        self.connect, self.run_role, self.make_context = connect, run_role, make_context
        self.stopping = threading.Event()
        #: the leader's refusals: request id -> the holders whose slice did not arrive
        self.refused: dict[str, list[str]] = {}
        self.port = None
        self._thread: threading.Thread | None = None

    def start(self, port) -> None:
        """Start the protocol's thread (the shell is listening)."""
        self.port = port
        port.report(ready=False, peers=dict.fromkeys(self.peers, "waiting"),
                    reason="waiting for the peers' hello")
        self._thread = threading.Thread(target=self._run, name=f"{self.name} protocol",
                                        daemon=True)
        self._thread.start()

    def note_refused(self, request_id: str, missing: list[str]) -> None:
        """The leader refused request_id for the slices of `missing` (the last REFUSALS kept:
        the shell asks at most a decision's timeout later)."""
        self.refused[request_id] = missing
        while len(self.refused) > REFUSALS:
            del self.refused[next(iter(self.refused))]

    def missing(self, request_id: str) -> list[str]:
        """The holders whose slice for request_id did not arrive (the leader's refusals)."""
        return list(self.refused.get(request_id, []))

    def stop(self, deadline_s: float) -> None:
        """SIGTERM: the role finishes its open batches, checkpoints and leaves."""
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(deadline_s)
            if self._thread.is_alive():
                log.error("%s: its protocol did not stop within %g s", self.name, deadline_s)

    def waiting_for(self, waiting: list[str]) -> None:
        """During the hello: which peers have not greeted yet (for /v1/health)."""
        self.port.report(peers={p: "waiting" if p in waiting else "up" for p in self.peers})

    def _run(self) -> None:
        try:
            chan = self.connect(self)
        except BaseException as e:  # noqa: BLE001 - reported to the shell, which stays up
            log.error("%s: cannot join its peers: %s", self.name, e)
            self.port.report(ready=False, reason=f"cannot join the peers: {e}")
            return
        if chan is None:  # stopped before every peer said hello
            return
        self.port.report(peers=dict.fromkeys(self.peers, "up"),
                         reason="resuming from the logs and checkpoints")
        try:
            ended_by = self.run_role(self.make_context(chan, self.port, self))
            chan.finish()
        except BaseException as e:  # noqa: BLE001 - the peers are told; the shell stays up
            self._failed(chan, e)
            return
        chan.close()
        if ended_by in (None, self.name) or self.stopping.is_set():
            self.port.report(ready=False, reason="stopped (SIGTERM)")
            return
        log.warning("%s stopped: the service stops; start every party again with --resume",
                    ended_by)
        self.port.report(ready=False, peers={**dict.fromkeys(self.peers, "up"),
                                             ended_by: "gone"},
                         reason=f"{ended_by} stopped: start every party again with --resume")

    def _failed(self, chan, error: BaseException) -> None:
        blamed = _blamed(error)
        text = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        log.error("%s: the protocol failed: %s", self.name, text)
        chan.abort(error)
        chan.close(1.0)
        peers = dict.fromkeys(self.peers, "up")
        if blamed and blamed != self.name:
            peers[blamed] = "gone"
        self.port.report(ready=False, peers=peers, reason=text)


class Follower:
    """A party the leader orders: its ops in order (the leader's ticks while idle), and its
    word to the leader when it leaves (SIGTERM)."""

    def __init__(self, ctx: ServeContext, leader: str):
        self.ctx, self.chan, self.leader = ctx, ctx.chan, leader
        self.n = 0           # the last numbered op received
        self.left = False
        self._heard = time.monotonic()

    def join(self) -> tuple[int, int]:
        """Tell the leader which ops this party checkpointed; (the op every party resumes
        from, the ops in the leader's log)."""
        self.chan.send(UP, self.leader, {"sync": self.ctx.state.saved()})
        op = self.next_op()
        if op is None or op["kind"] != "resume":
            raise ProtocolError(self.leader, OPS, f"expected where to resume, got {op!r:.80}")
        start = expect_field(op, "from", int, self.leader, OPS)
        self.n = start
        return start, expect_field(op, "ops", int, self.leader, OPS)

    def next_op(self, wait_s: float | None = None) -> dict | None:
        """The leader's next op (None if none came within wait_s, when given). Numbered ops
        come in order; a leader silent for run.deadline_s beyond serve.decision_timeout_s (no
        op, no tick: it may wait that long for a batch's slices) is named."""
        end = None if wait_s is None else time.monotonic() + wait_s
        deadline = self.ctx.config.run.deadline_s + self.ctx.config.serve.decision_timeout_s
        while True:
            got = self.chan.poll(OPS, [self.leader], POLL_S if end is None
                                 else max(0.0, min(POLL_S, end - time.monotonic())))
            now = time.monotonic()
            if got is not None:
                self._heard = now
                op = got[1]
                kind = expect_field(op, "kind", str, self.leader, OPS)
                if kind == "tick":
                    continue
                if "n" in op and kind != "checkpoint":
                    n = expect_field(op, "n", int, self.leader, OPS)
                    if n != self.n + 1:
                        raise ProtocolError(self.leader, OPS, f"op {n} after op {self.n}")
                    self.n = n
                return op
            if self.ctx.stopping and not self.left:
                self.left = True
                self.chan.send(UP, self.leader, {"leave": "stopped (SIGTERM)"})
            if now - self._heard > deadline:
                raise PeerTimeout(self.leader, f"{OPS} (no op or tick)", deadline)
            if end is not None and now >= end:
                return None

    def saved(self, n: int) -> None:
        """Tell the leader this party checkpointed op n."""
        self.chan.send(UP, self.leader, {"saved": n})


class OpLog:
    """The leader's log of ops, ``{"n", "kind", "ids"}`` a record, each durable before its
    op's result can be known anywhere (the shell's log format: CRC per line, fsync). Only
    their count is kept in memory; the ops logged before this start are read back from the
    file when they are replayed."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.wal = WriteAheadLog(self.path)
        #: ops logged
        self.n = 0
        for op in self.wal.records:
            if op.get("n") != self.n + 1 or not isinstance(op.get("ids"), list):
                raise DataError(f"{self.path}: record {self.n + 1} is not op {self.n + 1} "
                                f"(read {str(op)[:80]})")
            self.n += 1

    def logged_after(self, start: int) -> Iterator[dict]:
        """The ops logged before this start that follow op `start`, in order."""
        return itertools.islice(self.wal.records, start, None)

    def append(self, kind: str, ids: list[str], **extra) -> Future:
        """Log the next op; the future resolves once it is on disk."""
        self.n += 1
        return self.wal.append({"n": self.n, "kind": kind, "ids": list(ids), **extra})

    def close(self) -> None:
        self.wal.close()


def agree_resume(ctx: ServeContext, followers: list[str], logged: int) -> int:
    """The leader's side of the start: every follower's checkpoints (its first word, UP), the
    last op every party checkpointed (0: the initial state), which every follower is told
    with the number of ops logged; the op to resume from."""
    sets = {ctx.name: set(ctx.state.saved())}
    while len(sets) < len(followers) + 1:
        peer, msg = ctx.chan.receive_any(UP, [f for f in followers if f not in sets])
        saved = expect_field(msg, "sync", list, peer, UP)
        if not all(isinstance(n, int) for n in saved):
            raise ProtocolError(peer, UP, f"checkpoints {saved!r:.80} are not op numbers")
        sets[peer] = set(saved)
    ahead = {p: max(s) for p, s in sets.items() if s and max(s) > logged}
    if ahead:  # the op log lost ops the model has: resuming from op 0 would rewind it
        raise DataError(f"{ctx.state.oplog_path} holds {logged} ops, but checkpoints run "
                        f"further ({', '.join(f'{p} at op {n}' for p, n in ahead.items())}): "
                        "the op log was cut or replaced; restore it from a copy (refusing to "
                        "resume behind the checkpoints)")
    common = set.intersection(*(s | {0} for s in sets.values()))
    start = max(n for n in common if n <= logged)
    for f in followers:
        ctx.chan.send(OPS, f, {"kind": "resume", "from": start, "ops": logged})
    behind = {p: max(s, default=0) for p, s in sets.items() if max(s, default=0) != start}
    log.info("resuming from op %d of %d%s", start, logged,
             f" (checkpoints further on: {behind})" if behind else "")
    return start
