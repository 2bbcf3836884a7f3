"""A real `mpcbandit serve --out DIR` service for tests (every party its own process, the
launcher too), the three organisations' applications as HTTP clients, and what tests read back
from the service's folder (its logs, the float64 replay)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from children import popen, stopping_unless_started
from mpcbandit.serve.wal import read_records
from serve_support import REPO, call, deadline, wait_for

HOLDERS = ["feature_holder.0", "feature_holder.1"]
PULLER, REWARD, DEALER = "arm_puller.0", "reward_holder.0", "dealer.0"
PARTIES = HOLDERS + [PULLER, REWARD, DEALER]
#: a small Hannun service: A = 4 arms, D = 6 features over two holders; its dealer reveals
#: the exploration keys at each stop, so that serve-replay checks every decision exactly
SETTINGS = ["hannun.arms=4", "hannun.dims=6", "serve.batch_ms=10",
            f"run.deadline_s={deadline(20):g}", "hannun.reveal=stop"]
DIMS, ARMS = 6, 4


def env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")


class Service:
    """`mpcbandit serve hannun-synthetic --out DIR` (or --resume), as a child process; another
    protocol's service with its config, settings and parties."""

    def __init__(self, out: Path, *sets: str, resume: bool = False, ready: bool = True,
                 data: Path | None = None, config: str = "hannun-synthetic",
                 settings: list[str] = SETTINGS, parties: list[str] = PARTIES,
                 net: str | None = None):
        self.out = Path(out)
        self.log = self.out.parent / f"{self.out.name}-launcher.log"
        self.parties = parties
        args = (["--resume"] if resume else [config] +
                [a for s in (*settings, *sets) for a in ("--set", s)])
        args += ["--data", str(data)] if data is not None else []
        args += ["--net", net] if net is not None else []
        (self.out / "endpoints.json").unlink(missing_ok=True)
        with open(self.log, "ab") as f:
            self.proc = popen([sys.executable, "-m", "mpcbandit", "serve", *args,
                               "--out", str(self.out)], cwd=REPO, env=env(),
                              stdout=f, stderr=subprocess.STDOUT)
        with stopping_unless_started(self.proc):
            self.urls = wait_for(self._endpoints, "the service's endpoints.json")
            if ready:
                self.wait_ready()

    def _endpoints(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"the launcher exited {self.proc.returncode}: "
                                 f"{self.log.read_text()}")
        path = self.out / "endpoints.json"
        return path.exists() and json.loads(path.read_text())

    def health(self, party: str) -> dict:
        return call(self.urls[party], "GET", "/v1/health")[1]

    def wait_ready(self) -> None:
        wait_for(lambda: all(self.health(p)["ready"] for p in self.parties), "every party ready")

    def post(self, party: str, route: str, body: dict):
        status, answer, headers = call(self.urls[party], "POST", route, body)
        return status, answer, headers

    def pids(self) -> dict[str, int]:
        """Each party's process id (the launcher's children, by their --role/--index)."""
        out = {}
        for line in subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(self.proc.pid)],
                                   capture_output=True, text=True).stdout.splitlines():
            pid, _, args = line.strip().partition(" ")
            words = args.split()
            if "--role" in words:
                role = words[words.index("--role") + 1]
                out[f"{role}.{words[words.index('--index') + 1]}"] = int(pid)
        return out

    def stop(self) -> int:
        """SIGTERM the launcher (every party drains); its exit status."""
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(deadline(60))

    def metric(self, party: str, name: str) -> float:
        text = call(self.urls[party], "GET", "/metrics")[1]
        return sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith(name + " ") or line.startswith(name + "{"))


def context(rng) -> np.ndarray:
    """A context of norm at most 1, its norm in [0.5, 1]."""
    x = rng.normal(size=DIMS)
    return x / np.linalg.norm(x) * rng.uniform(0.5, 1.0)


class Apps:
    """The organisations' applications: the two feature holders post their slices, the ad
    server (p''s) asks for arms, the shop (p'''s) posts rewards; every acknowledged request
    is remembered."""

    decider, rewarder = PULLER, REWARD   # the parties that take decisions and rewards

    def __init__(self, svc: Service, seed: int = 0):
        self.svc, self.rng = svc, np.random.default_rng(seed)
        self.lock = threading.Lock()
        self.acked: dict[str, set] = {"contexts": set(), "decisions": set(), "rewards": set()}
        #: every reward posted, answered or not (one the party logged before it was killed may
        #: be applied without its 202 ever reaching the application)
        self.posted_rewards: set[str] = set()
        self.arms: dict[str, int] = {}

    def contexts(self, rid: str, holders=HOLDERS) -> None:
        with self.lock:
            x = context(self.rng)
        for i, h in enumerate(HOLDERS):
            if h in holders:
                part = x[:DIMS // 2] if i == 0 else x[DIMS // 2:]
                status, _, _ = self.svc.post(h, "/v1/contexts", {"id": rid,
                                                                 "features": part.tolist()})
                if status == 202:
                    with self.lock:
                        self.acked["contexts"].add((h, rid))

    def decide(self, rid: str):
        status, body, headers = self.svc.post(self.decider, "/v1/decisions", {"id": rid})
        if status == 200:
            with self.lock:
                self.arms[rid] = body["arm"]
                self.acked["decisions"].add(rid)
        return status, body, headers

    def decided(self, ids) -> None:
        """Post each id's slices and ask for its decision, one after the other: every one 200."""
        for rid in ids:
            self.contexts(rid)
            status, body, _ = self.decide(rid)
            assert status == 200, body

    def reward(self, rid: str, value: float | None = None):
        if value is None:
            value = float(self.arms[rid] % 2 == 0)
        with self.lock:
            self.posted_rewards.add(rid)
        status, body, _ = self.svc.post(self.rewarder, "/v1/rewards", {"id": rid,
                                                                      "reward": value})
        if status == 202:
            with self.lock:
                self.acked["rewards"].add(rid)
        return status, body


@contextmanager
def running(apps):
    """The applications of a service (apps.svc: the running service, replaced when a test
    resumes it), stopped at the end whatever happened."""
    try:
        yield apps
    finally:
        if apps.svc.proc.poll() is None:
            apps.svc.stop()


def serving(out: Path, *sets: str, seed: int = 0):
    """A new service in out and its applications, stopped at the end (`running`)."""
    return running(Apps(Service(out, *sets), seed))


def records(out: Path, party: str, name: str = "requests.wal") -> list[dict]:
    return read_records(Path(out) / party / name)[0]


def checkpoint_state(out: Path, party: str, name: str):
    """What party's checkpoint `name` holds (e.g. the dealer's "keys"), unsealed with the key
    of its CURVE secret key in out/keys (the launcher's), as only its host can."""
    from mpcbandit.checkpoint import opened, state_seal
    from mpcbandit.net.security import load_curve

    run_id = json.loads((Path(out) / party / "run.json").read_text())["run_id"]
    seal = state_seal(load_curve(str(Path(out) / "keys"), party, []).keypair.secret, party,
                      run_id)
    return opened(Path(out) / party / "checkpoints" / party / f"{name}.ckpt", party, seal)["state"]


def replay(out: Path) -> dict:
    """`mpcbandit serve-replay OUT --json`: its report."""
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve-replay", str(out), "--json"],
                          cwd=REPO, env=env(), capture_output=True, text=True,
                          timeout=deadline(120))
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _applied_once(applied: list[str], apps) -> bool:
    """Every acknowledged reward applied, none twice, none that was never posted (a reward
    posted as its party was killed may be applied unanswered: it was in the log)."""
    return (set(apps.acked["rewards"]) <= set(applied) <= apps.posted_rewards
            and len(applied) == len(set(applied)))


def applied_rewards(out: Path, leader: str = PULLER) -> list[str]:
    """The reward ids the leader (Hannun's p', O3M's AP) applied, in order (its op log's
    update ops)."""
    return [i for op in records(out, leader, "ops.wal") if op["kind"] == "update"
            for i in op["ids"]]


def decide_in_waves(apps, ids: list[str], rng, workers: int, wave: int = 40) -> None:
    """Post each id's contexts and ask its decision, `workers` at a time, in waves of `wave`
    ids (every one 200); the rewards of a wave's half come during the next waves, shuffled."""
    def one(rid):
        apps.contexts(rid)
        return apps.decide(rid)[0]

    with ThreadPoolExecutor(workers) as pool:
        for start in range(0, len(ids), wave):
            chunk = ids[start:start + wave]
            assert list(pool.map(one, chunk)) == [200] * len(chunk)
            late = [i for i in ids[:start] if i in apps.arms and rng.random() < 0.5
                    and i not in apps.acked["rewards"]]
            rng.shuffle(late)
            assert [apps.reward(i)[0] for i in late] == [202] * len(late)


def stop_amid_decisions(apps, ids: list[str]) -> int:
    """SIGTERM the service while the decisions of ids (their contexts posted) are in flight:
    each is answered (200, or 503 if it came after the stop); the launcher's exit status."""
    with ThreadPoolExecutor(8) as pool:
        for rid in ids:
            apps.contexts(rid)
        answers = pool.map(apps.decide, ids)
        code = apps.svc.stop()
        assert {a[0] for a in answers} <= {200, 503}
    return code


def traffic(apps, prefix: str, stop: threading.Event, workers: int) -> None:
    """Until stop: `workers` applications each posting an id's contexts, asking its decision
    and posting its reward, over and over (a party killed meanwhile is retried)."""
    def worker(w):
        k = 0
        while not stop.is_set():
            rid = f"{prefix}{w}-{k}"
            k += 1
            try:
                apps.contexts(rid)
                if apps.decide(rid)[0] == 200:
                    apps.reward(rid)
            except OSError:   # the party it talks to was killed
                time.sleep(0.05)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(worker, range(workers)))


def kill_9_and_resume(apps, victims: list[str], witness_of, leader: str, width: int,
                      workers: int = 6) -> None:
    """Each victim in turn killed with -9 amid traffic, in one service: witness_of(victim)
    reports it gone, a decision is a 503 naming it (unless it is the leader); the launcher
    exits 1; `serve --resume`: every acknowledged id is a 409 (contexts of `width` numbers) and
    the traffic goes on (to the next kill). At the end every acknowledged reward of every phase
    is applied once (the leader's op log), and the service stops cleanly. (One service for
    every victim: each kill and resume is the same as in a service of its own, and the
    service's start and its replay are paid once, not once a victim.)"""
    out = apps.svc.out
    stop = threading.Event()

    def phase(prefix: str, rewards: int, what: str) -> threading.Thread:
        """Traffic under prefix until `rewards` of its rewards are acknowledged (still going)."""
        stop.clear()
        moving = threading.Thread(target=traffic, args=(apps, prefix, stop, workers), daemon=True)
        moving.start()
        # tuple() copies the set under the GIL: the traffic's threads add to it meanwhile
        wait_for(lambda: sum(r.startswith(prefix) for r in tuple(apps.acked["rewards"]))
                 >= rewards, what)
        return moving

    try:
        for k, victim in enumerate(victims):
            svc, witness = apps.svc, witness_of(victim)
            moving = phase(f"{k}-", 40, f"traffic under way before killing {victim}")
            os.kill(svc.pids()[victim], signal.SIGKILL)
            wait_for(lambda: svc.health(witness)["peers"].get(victim) == "gone",
                     f"{witness} reports {victim} gone", deadline(30))
            if victim != leader:
                status, body, _ = apps.decide(f"after-killing-{victim}")
                assert status == 503 and victim in body["error"] and body["gone"] == [victim]
            stop.set()
            moving.join(deadline(60))
            assert svc.stop() == 1   # one party did not drain: it was killed
            svc = apps.svc = Service(out, resume=True, parties=svc.parties)
            for rid in sorted(apps.acked["decisions"])[:5]:   # the logs remember every id
                assert apps.decide(rid)[0] == 409
            for party, rid in sorted(apps.acked["contexts"])[:5]:
                assert svc.post(party, "/v1/contexts", {"id": rid, "features": [0.1] * width}
                                )[0] == 409
            for rid in sorted(apps.acked["rewards"])[:5]:
                assert apps.reward(rid)[0] == 409
        moving = phase("last-", 20, "traffic after the last resume")
        stop.set()
        moving.join(deadline(60))
        try:
            wait_for(lambda: _applied_once(applied_rewards(out, leader), apps),
                     "every acknowledged reward applied, once, and nothing never posted")
        except AssertionError as e:
            applied, acked = applied_rewards(out, leader), set(apps.acked["rewards"])
            twice = sorted({i for i in applied if applied.count(i) > 1})
            raise AssertionError(f"{e}: never applied {sorted(acked - set(applied))}, applied "
                                 f"twice {twice}, applied but never posted "
                                 f"{sorted(set(applied) - apps.posted_rewards)}") from None
        assert apps.svc.stop() == 0
    finally:
        stop.set()
        if apps.svc.proc.poll() is None:
            apps.svc.stop()
