"""The serve shell under test: a fake backend (no shares, no MPC), a service running in a
thread of its own, a party process, and a plain HTTP client."""

from __future__ import annotations

import asyncio
import dataclasses
import http.client
import json
import os
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.config import ServeSection, load_config
from mpcbandit.data.hannun_data import service_factor
from mpcbandit.files import make_private_dir, write_private
from mpcbandit.protocols.hannun.serve_reference import ServeReference
from mpcbandit.serve.server import drain_and_stop, start_service
from mpcbandit.serve.service import ServiceRole
from mpcbandit.serve.wal import encode_record

from children import popen, stopping_unless_started
from deadlines import DEADLINE_S, deadline, wait_for  # noqa: F401 (tests import them from here)

REPO = Path(__file__).resolve().parents[1]
#: the settings of the Hannun service whose state folders service_logs writes
LOGGED_SETS = ["hannun.arms=4", "hannun.dims=6", "hannun.epsilon=0.0", 'hannun.exploration="seeded"']


def arm_for(rid: str, arms: int = 10) -> int:
    """The arm the fake backend picks for an id."""
    return zlib.crc32(rid.encode()) % arms


def take_once_waiting(queue, **next_batch) -> tuple[threading.Thread, dict]:
    """A thread taking queue.next_batch(**next_batch) into result["batch"], returned once it
    waits inside the queue (or has returned already)."""
    waits, real_wait = threading.Event(), queue._cond.wait

    def wait(timeout=None):
        waits.set()
        return real_wait(timeout)

    queue._cond.wait = wait
    result: dict = {}
    taker = threading.Thread(target=lambda: result.setdefault("batch",
                                                              queue.next_batch(**next_batch)))
    taker.start()
    wait_for(lambda: waits.is_set() or not taker.is_alive(), "the taker waits or returns")
    return taker, result


def gate_first_fsync(monkeypatch, wal_module) -> tuple[list, threading.Event, threading.Event]:
    """Hold the log's first fsync until released: (the fds synced, entered, release)."""
    real_fsync = os.fsync
    calls, entered, release = [], threading.Event(), threading.Event()

    def gated_fsync(fd):
        calls.append(fd)
        if len(calls) == 1:
            entered.set()
            assert release.wait(deadline(30))
        real_fsync(fd)

    monkeypatch.setattr(wal_module.os, "fsync", gated_fsync)
    return calls, entered, release


class FakeBackend:
    """Plain code in the backend's place: decides each batch at once (arm_for(id)), or holds
    its decisions until released; pulls each kind unless paused; records every batch."""

    def __init__(self, kinds=("contexts", "decisions", "rewards"), *, ready=True, peers=None,
                 hold=False, missing=(), paused=()):
        self.kinds = list(kinds)
        self.ready = ready
        self.peers = dict(peers or {"feature_holder.1": "up"})
        self.batches: list[tuple[str, list]] = []
        self.missing_holders = list(missing)
        self.step = 0
        self.port = None
        self._lock = threading.Lock()
        self._release = threading.Event()
        if not hold:
            self._release.set()
        self._resume = {k: threading.Event() for k in self.kinds}
        for k in self.kinds:
            if k not in paused:
                self._resume[k].set()
        self._threads: list[threading.Thread] = []
        self.stopped = False

    # the Backend interface
    def start(self, port) -> None:
        self.port = port
        port.report(ready=self.ready, peers=self.peers, step=0)
        for kind in self.kinds:
            t = threading.Thread(target=self._pull, args=(kind,), daemon=True)
            t.start()
            self._threads.append(t)

    def missing(self, request_id: str) -> list[str]:
        return list(self.missing_holders)

    def stop(self, deadline_s: float) -> None:
        end = time.monotonic() + deadline_s
        for t in self._threads:
            t.join(max(0.0, end - time.monotonic()))
        self.stopped = True

    # what tests do to it
    def release(self) -> None:
        """Decide the held decisions (and every later one at once)."""
        self._release.set()

    def resume(self, kind: str) -> None:
        """Start pulling a paused kind."""
        self._resume[kind].set()

    def go_down(self, peer: str) -> None:
        """Say a peer is gone."""
        self.peers[peer] = "gone"
        self.port.report(peers=self.peers, reason=f"{peer} stopped answering")

    def batches_of(self, kind: str) -> list[list]:
        with self._lock:
            return [items for k, items in self.batches if k == kind]

    def _pull(self, kind: str) -> None:
        while not self.port.drained(kind):
            if not self._resume[kind].wait(0.05):
                continue
            batch = self.port.next_batch(kind, wait_s=0.05)
            if batch is None:
                continue
            with self._lock:
                self.batches.append((kind, [getattr(i, "id", i) for i in batch.items]))
            if kind != "decisions":
                continue
            taken = time.monotonic()
            self._release.wait(DEADLINE_S)
            self.port.report_stage("rounds", time.monotonic() - taken, len(batch.items))
            self.step += 1
            for ticket in batch.items:
                ticket.decide(arm_for(ticket.id), self.step)
            self.port.report(step=self.step)
            self.port.report_op("decide", 16, 1000 * len(batch.items))


def serve_section(**values) -> ServeSection:
    """A [serve] section: small deadlines for tests (lengthened on a slow machine), loopback,
    a free port."""
    base = {"batch_ms": 2.0, "decision_timeout_s": deadline(5.0)}
    return dataclasses.replace(ServeSection(), **{**base, **values})


class LiveService:
    """A party API served from an event loop in a thread of its own (no signals)."""

    def __init__(self, wal_path: Path, *, serve: ServeSection | None = None,
                 role: ServiceRole | None = None, backend: FakeBackend | None = None):
        self.backend = backend or FakeBackend()
        self.role = role or ServiceRole("party.0", features=2, decides=True, rewards=True)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.running = asyncio.run_coroutine_threadsafe(
            start_service(serve or serve_section(), self.role, self.backend, wal_path),
            self.loop).result(DEADLINE_S)
        self.service = self.running.service
        self.url = self.running.url

    def call(self, method: str, path: str, body=None, **kw):
        return call(self.url, method, path, body, **kw)

    def close(self) -> None:
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(drain_and_stop(self.running, deadline(10)),
                                             self.loop).result(DEADLINE_S)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(DEADLINE_S)


def call(url: str, method: str, path: str, body=None, *, token: str | None = None,
         raw: bytes | None = None, timeout: float = DEADLINE_S):
    """(status, JSON body or text, headers) of one request over a fresh connection."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    try:
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        text = resp.read()
        kind = resp.getheader("Content-Type", "")
        out = json.loads(text) if kind.startswith("application/json") else text.decode()
        return resp.status, out, dict(resp.getheaders())
    finally:
        conn.close()


def start_party(tmp_path: Path, *args: str, name: str = "party") -> tuple[subprocess.Popen, str]:
    """Start tests/serve_party.py (a party process with the fake backend); (process, url)."""
    url_file = tmp_path / f"{name}.url"
    url_file.unlink(missing_ok=True)
    log = open(tmp_path / f"{name}.log", "ab")
    proc = popen([sys.executable, str(REPO / "tests" / "serve_party.py"),
                  "--url-file", str(url_file), *args], cwd=REPO,
                 env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=log, stderr=log)
    log.close()

    def listening():
        if proc.poll() is not None:
            raise AssertionError(f"the party exited with {proc.returncode}: "
                                 f"{(tmp_path / f'{name}.log').read_text()}")
        return url_file.exists() and url_file.read_text()

    with stopping_unless_started(proc):
        return proc, wait_for(listening, "the party process listens")


def service_logs(out: Path, flip: str | None = None, run_id: str | None = None, *,
                 ref: ServeReference | None = None, flips=()) -> dict[str, int]:
    """Every party's state folder out/<party>/ of a Hannun service (LOGGED_SETS; or A = 4,
    D = 6 and the stream of ref) that served the float64 model's arms (the arm of `flip` and
    of each id in `flips` one higher), rewards applied to the arms served; with run_id, each
    folder's record of the service too (as its party writes it). The arms served, by id."""
    cfg = load_config(REPO / "configs/hannun-synthetic.toml", LOGGED_SETS)
    ref = ref or ServeReference(4, 6, 0.0, 20, exploration_key(cfg.seed))
    flips = {*flips, flip}
    rng = np.random.default_rng(11)
    theta = rng.normal(size=(4, 6))
    logs = {p: [] for p in ("feature_holder.0", "feature_holder.1", "arm_puller.0",
                            "reward_holder.0")}
    ops, served, context, waiting = [], {}, {}, []
    # the holders multiply every posted slice by 1/sqrt(2) (hannun.norms = "auto", so that the
    # whole context stays within 1): the model sees the scaled contexts, the logs what was posted
    factor = service_factor(cfg.section)
    for batch in range(30):
        x = rng.normal(size=(4, 6))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        ids = [f"b{batch}-{k}" for k in range(4)]
        for rid, arm, row in zip(ids, ref.decide(x * factor), x):
            served[rid] = (int(arm) + 1) % 4 if rid in flips else int(arm)
            context[rid] = row * factor
            logs["feature_holder.0"].append({"kind": "context", "id": rid,
                                             "features": row[:3].tolist()})
            logs["feature_holder.1"].append({"kind": "context", "id": rid,
                                             "features": row[3:].tolist()})
            logs["arm_puller.0"].append({"kind": "decision", "id": rid, "arm": served[rid]})
        ops.append({"n": len(ops) + 1, "kind": "decide", "ids": ids})
        if waiting:   # the previous batch's rewards come now
            r = np.array([float(theta[served[i]] @ context[i] > 0) for i in waiting])
            ref.update(np.array([context[i] for i in waiting]),
                       np.array([served[i] for i in waiting]), r)
            logs["reward_holder.0"] += [{"kind": "reward", "id": i, "reward": v}
                                        for i, v in zip(waiting, r)]
            ops.append({"n": len(ops) + 1, "kind": "update", "ids": waiting})
        waiting = ids
    for party, records in logs.items():
        write_private(make_private_dir(out / party) / "requests.wal",
                      b"".join(map(encode_record, records)))
        if run_id is not None:
            write_private(out / party / "run.json", json.dumps({"party": party,
                                                                "run_id": run_id}))
    write_private(out / "arm_puller.0" / "ops.wal", b"".join(map(encode_record, ops)))
    return served
