"""Local launcher: every party of a config as its own OS process on this host.

Validates the config before anything starts, picks free ports when none are configured,
watches the children, shows progress, and on the first failure stops the rest, names the
failed party and its error, and leaves no child behind.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import nullcontext
from pathlib import Path

from tqdm import tqdm

from mpcbandit.checkpoint import common_checkpoint, prune_checkpoints
from mpcbandit.collect import check_one_run, read_result, summarize_run
from mpcbandit.config import Config, load_config
from mpcbandit.errors import MpcBanditError, PartyFailed
from mpcbandit.files import RunLock, make_private_dir, write_json
from mpcbandit.local_procs import local_network, pick_base_port, project_root, spawn, stop_all
from mpcbandit.progress_file import read_progress
from mpcbandit.protocols import get_protocol, progress_line
from mpcbandit.results import build_summary, format_summary, write_summary
from parties import check_security_mode

__all__ = ["run_local", "run_plaintext", "resume_run", "common_checkpoint", "pick_base_port",
           "project_root", "local_network", "spawn", "stop_all"]

_POLL_S = 0.05
#: how often the watchdog reads every progress file: its limit is minutes, and a run of a
#: hundred parties would otherwise read two thousand files a second
_WATCH_EVERY_S = 1.0
#: after a first failure, how long other parties' failures are awaited to find the root
_BLAME_GRACE_S = 1.5


def run_plaintext(cfg: Config, out_dir: Path, echo=print, data_dir: Path | None = None,
                  replay_of: dict | None = None) -> dict:
    """The protocol's non-private reference (on every party's folder of data_dir, if given;
    with replay_of, a secure run's summary, on what that run revealed at its end), written as
    a summary of the same shape."""
    t0 = time.perf_counter()
    fields = get_protocol(cfg.protocol).reference(cfg, data_dir, replay_of)
    wall = time.perf_counter() - t0
    party = {"role": "plaintext", "index": 0, "pid": os.getpid(), "host": socket.gethostname(),
             "rounds": 0, "hops": 0, "messages": 0, "bytes_sent": 0, "bytes_received": 0,
             "compute_s": wall, "wait_s": 0.0, "by_op": {}, "protocol_wall_s": wall,
             "close_s": 0.0, "control_messages": 0}
    summary = build_summary(cfg, fields, [party], wall, plaintext=True)
    path = write_summary(out_dir, summary)
    echo(format_summary(summary) + f"\nsummary: {path}")
    return summary


def _failure_reason(result_file: Path, log_file: Path, returncode: int) -> str:
    if result_file.exists():
        try:
            err = json.loads(result_file.read_text()).get("error")
            if err:
                return err
        except json.JSONDecodeError:
            pass
    if returncode < 0:
        return f"killed by signal {signal.Signals(-returncode).name}"
    tail = [ln for ln in log_file.read_text(errors="replace").splitlines() if ln.strip()][-3:]
    return f"exit code {returncode}" + (": " + " | ".join(tail) if tail else "")


#: the party a failure's reason blames first: where a peer said the run failed (an abort),
#: a peer gone or silent, a peer that sent something wrong
_BLAMED = re.compile(r"(?:party|no message from peer|peer) '([^']+)'")
#: a party that refused a peer in the hello (another config, other data) failed of its own:
#: the peer it names only disagrees, it did not fail first
_HELLO_REFUSED = "(tag 'hello')"


def _culprit(procs: dict[str, subprocess.Popen], files: dict, first: str) -> PartyFailed:
    """The error that names the party at the root of a failure, after stopping every party.

    A frozen party makes its peers time out on each other: the first to give up may blame
    a party that only waited itself. Failures of the next moments are gathered, and the
    blame is followed from one timed-out party to the one it waited for, to the end.
    """
    end = time.monotonic() + _BLAME_GRACE_S
    while time.monotonic() < end and any(p.poll() is None for p in procs.values()):
        time.sleep(_POLL_S)
    states = {n: _Watchdog._state(n, p) for n, p in procs.items() if p.poll() is None}
    stop_all(procs)
    reasons = {n: _failure_reason(*files[n], p.returncode) for n, p in procs.items()
               if p.returncode not in (0, None) and n not in states}
    chain, name = [first], first
    links = []
    while name in reasons:
        if _HELLO_REFUSED in reasons[name]:  # two parties disagree on the run: that is the root
            break
        blamed = _BLAMED.search(reasons[name])
        if blamed is None or blamed.group(1) not in procs or blamed.group(1) in chain:
            break
        links.append("was told of" if reasons[name].startswith("PeerAborted") else "waited for")
        name = blamed.group(1)
        chain.append(name)
    if name in reasons:  # the chain ends at a party that failed of its own
        return PartyFailed(name, f"(pid {procs[name].pid}) {reasons[name]}")
    stopped = [n for n, st in states.items() if st == "stopped"]
    if name not in stopped and stopped:  # a frozen process is the root, wherever the chain ends
        links.append("waited for")
        chain.append(stopped[0])
        name = stopped[0]
    waits = chain[0] + "".join(f", which {how} {n}" for how, n in zip(links, chain[1:]))
    last = [n for n in chain if n in reasons][-1]
    return PartyFailed(name, f"(pid {procs[name].pid}) sent nothing ({states.get(name, 'gone')}): "
                             f"{waits}; {last}: {reasons[last]}")


class _Progress:
    """Steps done, rate, elapsed time and ETA, read from the parties' progress files: a tqdm bar
    on a terminal, a line every 10 s otherwise."""

    def __init__(self, paths: list[Path], echo):
        self.paths, self.echo = paths, echo
        self.tty = sys.stdout.isatty()
        self.last = 0.0
        self.bar: tqdm | None = None
        self.first: tuple[float, int] | None = None  # (time, step) of the first reading

    def show(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        its, total, rounds = [], 0, 0
        for p in self.paths:
            got = read_progress(p)
            if got is None:
                continue
            i, t, r = got
            if t and i >= t and t < total:  # a party done with its own, shorter part
                continue
            its.append(i)
            total, rounds = max(total, t), max(rounds, r)
        its = [i for i in its if i < total] or its  # parties still working set the pace
        if not its:
            return
        step = min(its)
        if self.first is None:
            self.first = (now, step)  # resumed runs start past 0; start-up is not a rate
        if self.tty:
            if self.bar is None:
                # a pseudo-terminal may report 0 x 0, where tqdm would draw nothing
                size = shutil.get_terminal_size()
                self.bar = tqdm(total=total or None, initial=step, unit="step", desc="[mpcbandit]",
                                ncols=size.columns, nrows=size.lines, file=sys.stdout)
            self.bar.n = step
            self.bar.set_postfix_str(f"rounds {rounds}", refresh=False)
            self.bar.refresh()
            if final:
                self.close()
        elif not final:
            t0, s0 = self.first
            self.echo(f"[mpcbandit] {progress_line(step - s0, step, total, now - t0)}, "
                      f"rounds so far {rounds}")

    def close(self) -> None:
        """End the terminal bar (after the last reading, or when the run fails)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class _Watchdog:
    """Stops a run that no longer moves: no party progressed for too long, or the wall cap passed.

    Every receive of a party has a deadline, so a healthy run reports progress at least every
    few deadlines; a run where nobody does is stuck (spinning or frozen parties) and is stopped
    with the party that lags named.
    """

    def __init__(self, cfg: Config, paths: dict[str, Path]):
        self.paths = paths
        self.stall_s = cfg.run.startup_s + 4 * cfg.run.deadline_s
        self.max_wall_s = cfg.run.max_wall_s
        self.start = self.moved = time.monotonic()
        self.checked = 0.0
        self.seen: dict[str, tuple[int, int, int]] = {}

    def check(self, procs: dict[str, subprocess.Popen]) -> None:
        """Raise PartyFailed naming the lagging party when the run is stuck or over its cap."""
        now = time.monotonic()
        if now - self.checked < _WATCH_EVERY_S:
            return
        self.checked = now
        for name, path in self.paths.items():
            got = read_progress(path)
            if got is not None and self.seen.get(name) != got:
                self.seen[name], self.moved = got, now
        if self.max_wall_s and now - self.start > self.max_wall_s:
            why = f"the run exceeded run.max_wall_s = {self.max_wall_s:g} s"
        elif now - self.moved > self.stall_s:
            why = (f"no party progressed for {now - self.moved:.0f} s (limit run.startup_s + "
                   f"4 x run.deadline_s = {self.stall_s:g} s)")
        else:
            return
        states = {n: self._state(n, p) for n, p in procs.items() if p.poll() is None}
        lagging = min(states, key=lambda n: (self._iteration(n), states[n] != "running"))
        others = ", ".join(f"{n} {self._where(n)} ({states[n]})"
                           for n in sorted(states) if n != lagging)
        raise PartyFailed(lagging, f"(pid {procs[lagging].pid}) stuck {self._where(lagging)} "
                          f"({states[lagging]}): {why}; stopped all parties"
                          + (f"; others: {others}" if others else ""))

    def _where(self, name: str) -> str:
        it = self._iteration(name)
        return f"at iteration {it}" if it >= 0 else "before its first iteration"

    def _iteration(self, name: str) -> int:
        return self.seen[name][0] if name in self.seen else -1  # -1: never reported

    @staticmethod
    def _state(name: str, proc: subprocess.Popen) -> str:
        try:
            code = Path(f"/proc/{proc.pid}/stat").read_text().split(") ", 1)[1][0]
        except (OSError, IndexError):
            return "unknown"
        return {"R": "running", "S": "waiting", "D": "in I/O", "T": "stopped"}.get(code, code)


def resume_run(out_dir: Path, echo=print) -> dict:
    """Continue the run in out_dir from the last iteration all its parties checkpointed."""
    out_dir = Path(out_dir)
    run_file = out_dir / "run.json"
    if not run_file.exists():  # before the lock, which would make the folder
        raise MpcBanditError(f"{out_dir} holds no run to resume (no run.json)")
    with RunLock(out_dir, fresh=True) as lock:  # held from reading the run to its end
        try:
            meta = json.loads(run_file.read_text())
            meta = {k: meta[k] for k in ("config", "overrides", "checkpoint_every", "run_id")} | {
                "insecure": bool(meta.get("insecure", False)), "data": meta.get("data")}
        except KeyError as e:  # run_id too: a run started before checkpoints named their run
            raise MpcBanditError(f"{run_file} lacks {e}; cannot resume this run") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, TypeError) as e:
            raise MpcBanditError(f"{run_file} is damaged ({type(e).__name__}: {e}); cannot "
                                 "resume this run") from None
        cfg = load_config(meta["config"], meta["overrides"])
        start = common_checkpoint(out_dir, [p.name for p in cfg.parties()])
        echo(f"[mpcbandit] resuming {out_dir} from iteration {start}")
        return run_local(cfg, out_dir, echo=echo, checkpoint_every=meta["checkpoint_every"],
                         resume_from=start, insecure=meta["insecure"], lock=lock,
                         run_id=meta["run_id"], data_dir=meta["data"] and Path(meta["data"]))


def run_local(cfg: Config, out_dir: Path, *, plaintext: bool = False, echo=print,
              checkpoint_every: int = 0, resume_from: int | None = None, insecure: bool = False,
              log_level: str = "INFO", lock: RunLock | None = None,
              run_id: str | None = None, data_dir: Path | None = None,
              replay_of: dict | None = None) -> dict:
    """Run every party of the (loaded, validated) config as a local process; return the summary.

    `lock`: the caller's lock on out_dir, held since before its own work (else taken here). A
    new run gets a fresh run_id (kept in run.json); a resumed one passes its own, so each
    party's checkpoints load only into the run instance that wrote them. data_dir: each party
    reads its own folder data_dir/<role>.<index>/ instead of the built-in task. replay_of:
    see run_plaintext."""
    if not plaintext:
        check_security_mode(cfg, insecure)
    if checkpoint_every or resume_from is not None:
        get_protocol(cfg.protocol).require_checkpoints()
    out_dir = Path(out_dir)
    # the folder is claimed, never chmodded: one we make is 0700, and every file in it 0600
    with nullcontext() if lock is not None else RunLock(out_dir):
        data_dir = data_dir and get_protocol(cfg.protocol).data_folders(
            data_dir, [p.name for p in cfg.parties()])
        if plaintext:
            return run_plaintext(cfg, out_dir, echo, data_dir, replay_of)
        if resume_from is None:
            run_id = secrets.token_hex(16)
            write_json(out_dir / "run.json", {"config": str(Path(cfg.source).resolve()),
                                              "overrides": list(cfg.overrides),
                                              "checkpoint_every": checkpoint_every,
                                              "insecure": insecure, "run_id": run_id,
                                              "data": None if data_dir is None else str(data_dir)})
        return _run_parties(cfg, out_dir, echo, checkpoint_every, resume_from, insecure, log_level,
                            run_id, data_dir)


def _run_parties(cfg: Config, out_dir: Path, echo, checkpoint_every: int,
                 resume_from: int | None, insecure: bool, log_level: str, run_id: str,
                 data_dir: Path | None = None) -> dict:
    """Spawn every party, watch them to the end, and write the run's summary."""
    cfg = local_network(cfg, out_dir)
    parties = cfg.parties()
    session = secrets.token_hex(8)
    for sub in ("parties", "logs", "progress"):
        make_private_dir(out_dir / sub)
    procs: dict[str, subprocess.Popen] = {}
    files = {}
    display = _Progress([out_dir / "progress" / p.name for p in parties], echo)
    t0 = time.perf_counter()
    try:
        for p in parties:
            result = out_dir / "parties" / f"{p.name}.json"
            log = out_dir / "logs" / f"{p.name}.log"
            progress = out_dir / "progress" / p.name
            for f in (result, progress):
                f.unlink(missing_ok=True)
            cmd = [sys.executable, "-m", "mpcbandit", "party", cfg.source,
                   "--role", p.role, "--index", str(p.index), "--session", session,
                   "--result", str(result), "--progress", str(progress)]
            for o in cfg.overrides:
                cmd += ["--set", o]
            if checkpoint_every or resume_from is not None:
                cmd += ["--checkpoint-dir", str(out_dir / "checkpoints"),
                        "--checkpoint-every", str(checkpoint_every), "--run-id", run_id]
            if resume_from is not None:
                cmd += ["--resume-from", str(resume_from)]
            if insecure:
                cmd.append("--insecure")
            if data_dir is not None:  # each party its own folder, never another's
                cmd += ["--data", str(data_dir / p.name)]
            cmd += ["--log-level", log_level]
            procs[p.name] = spawn(cmd, log)
            files[p.name] = (result, log)
        watchdog = _Watchdog(cfg, {p.name: out_dir / "progress" / p.name for p in parties})
        last_prune = time.monotonic()
        while True:
            failed = [(n, p.returncode) for n, p in procs.items()
                      if p.poll() is not None and p.returncode != 0]
            if failed:
                raise _culprit(procs, files, failed[0][0])
            if all(p.returncode == 0 for p in procs.values()):
                break
            display.show()
            watchdog.check(procs)
            if checkpoint_every and time.monotonic() - last_prune > 1.0:
                prune_checkpoints(out_dir, [p.name for p in parties])
                last_prune = time.monotonic()
            time.sleep(_POLL_S)
        display.show(final=True)
    except BaseException:
        display.close()
        stop_all(procs)
        raise
    wall = time.perf_counter() - t0
    results = check_one_run(cfg, [read_result(files[p.name][0]) for p in parties])
    summary = summarize_run(cfg, results, wall, resumed_from=resume_from)
    path = write_summary(out_dir, summary)
    echo(format_summary(summary) + f"\nsummary: {path}")
    return summary
