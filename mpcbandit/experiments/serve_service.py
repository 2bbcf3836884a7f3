"""One service of `mpcbandit bench serve`: `mpcbandit serve CONFIG --out DIR` as a child
process (the launcher, and every party its own process under it), what the bench reads of
it while it runs (each party's CPU time and memory from /proc, its /metrics), its stop (the
drain; the bench's dealer reveals its keys there, hannun.reveal = stop) and `mpcbandit
serve-replay` on its folder."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import click

import mpcbandit
from mpcbandit.local_procs import cpu_s
from mpcbandit.serve.local import ENDPOINTS

__all__ = ["BenchService", "metric"]

#: how long a service may take to start (five processes, CURVE keys, the hello) or stop
START_S, STOP_S = 120.0, 90.0
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def _env() -> dict:
    # the service's processes import this very package, wherever it was imported from
    return dict(os.environ, PYTHONPATH=str(Path(mpcbandit.__file__).resolve().parents[1]))


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return answer.read()


def metric(text: str, name: str, labels: str = "") -> float:
    """The sum of a Prometheus series' samples in text (those whose labels contain `labels`)."""
    total = 0.0
    for line in text.splitlines():
        head, _, value = line.rpartition(" ")
        if head == name or (head.startswith(name + "{") and labels in head):
            total += float(value)
    return total


class BenchService:
    """`mpcbandit serve CONFIG --out folder` with the given options, until stop()."""

    def __init__(self, config: str, folder: Path, options: list[str]):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.log = self.folder.parent / f"{self.folder.name}-launcher.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "mpcbandit", "serve", config, "--out", str(self.folder),
                 *options], env=_env(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL)
        try:
            self.urls = self._wait(self._endpoints, "its endpoints.json")
            self._wait(self._all_ready, "every party ready")
            self.pids = self._party_pids()
        except BaseException:
            self._terminate()   # the first failure is the one to report
            raise

    def _fail(self, what: str) -> click.ClickException:
        tail = self.log.read_text(errors="replace").splitlines()[-5:]
        return click.ClickException(f"bench serve: the service in {self.folder}: {what} "
                                    f"(launcher log {self.log}: {' | '.join(tail)}; the "
                                    f"parties' logs in {self.folder / 'logs'})")

    def _wait(self, condition, what: str):
        end = time.monotonic() + START_S
        while True:
            if self.proc.poll() is not None:
                raise self._fail(f"the launcher exited {self.proc.returncode} before {what}")
            got = condition()
            if got:
                return got
            if time.monotonic() > end:
                raise self._fail(f"not {what} within {START_S:g} s")
            time.sleep(0.1)

    def _endpoints(self) -> dict[str, str] | None:
        try:
            return json.loads((self.folder / ENDPOINTS).read_text())
        except (FileNotFoundError, ValueError):
            return None

    def _all_ready(self) -> bool:
        try:
            return all(json.loads(_get(u + "/v1/health"))["ready"] for u in self.urls.values())
        except (OSError, ValueError, KeyError):
            return False

    def _party_pids(self) -> dict[str, int]:
        """Each party's process id: the launcher's children, by their --role and --index."""
        pids = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                ppid = int(stat.read_text().rsplit(") ", 1)[1].split()[1])
                if ppid != self.proc.pid:
                    continue
                words = (stat.parent / "cmdline").read_bytes().decode().split("\0")
            except (OSError, IndexError, ValueError):
                continue  # a process that ended meanwhile
            if "--role" in words:
                role, index = words[words.index("--role") + 1], words[words.index("--index") + 1]
                pids[f"{role}.{index}"] = int(stat.parent.name)
        if set(pids) != set(self.urls):
            raise self._fail(f"found the processes of {sorted(pids)}, expected {sorted(self.urls)}")
        return pids

    def cpu_s(self) -> dict[str, float]:
        """Each party's process CPU time so far (user + system, every thread), seconds."""
        return {name: cpu_s(pid) for name, pid in self.pids.items()}

    def rss_mb(self, peak: bool = False) -> dict[str, float]:
        """Each party's resident memory now (or its peak so far), MB."""
        key = "VmHWM:" if peak else "VmRSS:"
        out = {}
        for name, pid in self.pids.items():
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith(key):
                    out[name] = int(line.split()[1]) / 1024
        return out

    def metrics(self, party: str) -> str:
        """The party's /metrics text."""
        return _get(self.urls[party] + "/metrics").decode()

    def _terminate(self) -> int | None:
        """SIGTERM the launcher and wait for it (SIGKILL after STOP_S): its exit status, or
        None if it had to be killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return None

    def stop(self) -> None:
        """SIGTERM the launcher: every party drains and checkpoints (the bench's dealer reveals
        its keys: hannun.reveal = stop)."""
        code = self._terminate()
        if code is None:
            raise self._fail(f"did not stop within {STOP_S:g} s of SIGTERM")
        if code != 0:
            raise self._fail(f"not every party stopped cleanly (launcher exit {code})")

    def replay(self) -> dict:
        """`mpcbandit serve-replay` on the stopped service's folder: its JSON report."""
        done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve-replay",
                               str(self.folder), "--json"], env=_env(), capture_output=True,
                              text=True, timeout=600)
        if done.returncode not in (0, 1) or not done.stdout.strip():
            raise self._fail(f"serve-replay exited {done.returncode}: "
                             f"{done.stderr.strip().splitlines()[-1:]}")
        return json.loads(done.stdout)
