"""The transport's floor, `mpcbandit bench transport`: one `exchange` round against raw pyzmq of
the same topology, measured in the same run, and CurveZMQ's cost on the default experiment."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import click

import mpcbandit
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    experiment_command,
    int_list,
    shipped_config,
    sized_option,
)
from mpcbandit.experiments.transport_worker import WARMUP
from mpcbandit.launch import pick_base_port, run_local

__all__ = ["CASES", "SIZES", "bench", "curve_cost_on_experiment", "timed_round"]

SIZES = [8, 64, 1024, 8 * 1024, 64 * 1024, 512 * 1024, 2 * 2**20, 8 * 2**20]
QUICK_SIZES = SIZES[::2] + [SIZES[-1]]
#: (processes, link, security); every case is timed at every payload size
CASES = [(2, "tcp", "none"), (2, "ipc", "none"), (3, "tcp", "none"), (3, "ipc", "none"),
         (2, "tcp", "curve"), (2, "ipc", "curve")]
COLUMNS = ["procs", "link", "security", "payload_bytes", "ours_us", "raw_us", "ratio",
           "ours_cpu_us", "raw_cpu_us", "ours_mb_s", "raw_mb_s", "pinned"]
EXPERIMENT_COLUMNS = ["experiment", "curve_ms_per_iteration", "none_ms_per_iteration",
                      "curve_over_none", "critical_rounds_per_iteration", "raw_round_us",
                      "vs_rounds_x_raw_round", "busiest_kb_per_iteration"]
#: the per-round goals of the transport: within 1.5x of raw up to 8 KiB, 1.2x from 64 KiB
SMALL_GOAL, LARGE_GOAL = 1.5, 1.2
#: how long a case's workers may take: a stuck worker fails the bench by name, never hangs it
WORKER_TIMEOUT_S = 600


def timed_round(n: int, mode: str, sizes: list[int], quick: bool, pin: bool) -> list[dict]:
    """n worker processes of one mode; per size, the median round over ranks and their mean CPU."""
    base = pick_base_port("127.0.0.1", n)
    # the workers import this very package, wherever it was imported from
    env = dict(os.environ, PYTHONPATH=str(Path(mpcbandit.__file__).resolve().parents[1]))
    with tempfile.TemporaryDirectory(prefix="mpcbandit-bench-") as ipc_dir:
        cmd = [sys.executable, "-m", "mpcbandit.experiments.transport_worker"]
        procs = [subprocess.Popen(cmd + [str(r), str(n), str(base), mode, ",".join(map(str, sizes)),
                                        ipc_dir] + ["--quick"] * quick + ["--pin"] * pin,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                  text=True) for r in range(n)]
        try:
            outs = [p.communicate(timeout=WORKER_TIMEOUT_S) for p in procs]
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise click.ClickException(f"bench transport: {mode} with {n} processes did not finish "
                                       f"in {WORKER_TIMEOUT_S} s (sizes {sizes})")
    failed = [(r, p.returncode, err.strip().splitlines()[-1:]) for r, (p, (_, err))
              in enumerate(zip(procs, outs)) if p.returncode]
    if failed:
        raise click.ClickException(f"bench transport: {mode} with {n} processes, worker(s) failed "
                                   f"(rank, exit code, last line): {failed}")
    per_rank = [json.loads(out) for out, _ in outs]
    return [{"size": rows[0]["size"],
             "median_us": statistics.median(r["median_us"] for r in rows),
             "mb_s": statistics.median(r["mb_s"] for r in rows),
             "cpu_us": statistics.mean(r["cpu_us"] for r in rows)}
            for rows in zip(*per_rank)]


def curve_cost_on_experiment(repeats: int, raw_round_us: float, out: Path) -> list:
    """The default experiment with CurveZMQ and without (interleaved runs, medians; each run's
    folder under `out`): seconds per iteration, and those against its critical rounds × the raw
    2-process round of this run."""
    per_iteration: dict[str, list[float]] = {"curve": [], "none": []}
    summaries = {}
    for r in range(repeats):
        for security in ("curve", "none"):  # interleaved: drifts of the machine hit both
            cfg = shipped_config("hannun-synthetic.toml", [f'run.security="{security}"'])
            s = summaries[security] = run_local(cfg, out / f"{security}-{r}", echo=lambda *_: None)
            per_iteration[security].append(s["protocol_wall_s"] / s["steps"])
    curve, none = (statistics.median(per_iteration[k]) for k in ("curve", "none"))
    s = summaries["curve"]
    rounds = s["critical_rounds_per_step"]
    floor = rounds * raw_round_us * 1e-6
    return ["hannun-synthetic.toml", curve * 1e3, none * 1e3, curve / none, rounds, raw_round_us,
            curve / floor, s["bytes_per_step"] / 1e3]


def _goal_note(rows: list[dict]) -> str:
    """How many cases meet the per-round goals, and the worst ratio of each band."""
    parts = []
    for band, goal, keep in (("<= 8 KiB", SMALL_GOAL, lambda b: b <= 8 * 1024),
                             (">= 64 KiB", LARGE_GOAL, lambda b: b >= 64 * 1024)):
        ratios = [r["ratio"] for r in rows if keep(r["payload_bytes"])]
        if ratios:
            met = sum(x <= goal for x in ratios)
            parts.append(f"payloads {band}: {met} of {len(ratios)} within {goal}x of raw "
                         f"(worst {max(ratios):.2f}x)")
    return "Goal: " + "; ".join(parts) + "." if parts else ""


def _panels(rows: list[dict]) -> list[Panel]:
    """Round time against payload, ours beside raw, per (processes, security), tcp and ipc."""
    panels = []
    for procs, security in ((2, "none"), (3, "none"), (2, "curve")):
        curves = []
        for link in ("tcp", "ipc"):
            case = [r for r in rows if (r["procs"], r["link"], r["security"])
                    == (procs, link, security)]
            if case:
                x = [r["payload_bytes"] for r in case]
                curves += [Curve(f"ours, {link}", x, [r["ours_us"] for r in case]),
                           Curve(f"raw pyzmq, {link}", x, [r["raw_us"] for r in case],
                                 dashed=True)]
        if curves:
            panels.append(Panel(f"{procs} processes, security {security}", "payload (bytes)",
                                "µs per round (median)", curves, logx=True))
    return panels


@experiment_command("transport", "every payload 8 B to 8 MiB at full repetitions",
                    short_help="One exchange round: our channel beside raw pyzmq")
@sized_option("--sizes", int_list, QUICK_SIZES, SIZES, "Payload sizes in bytes, comma separated")
@click.option("--repeats", type=click.IntRange(min=1), default=3,
              help="Interleaved runs of ours and raw per case; the fastest of each is reported.")
@click.option("--pin", is_flag=True,
              help="Pin process r to core r mod cores, ours and raw alike: steadier figures. "
                   "Unpinned, each process and zmq's I/O threads share the cores freely and the "
                   "fastest placement of a run decides its figure.")
@click.option("--experiment", is_flag=True,
              help="Also run the default experiment with CurveZMQ and without (interleaved, "
                   "REPEATS each, their folders under runs/ in OUT) and set it against its "
                   "critical rounds times the raw 2 process round of this run.")
def bench(out: Output, paper: bool, sizes: list[int], repeats: int, pin: bool,
          experiment: bool) -> None:
    """One exchange round (every party sends the payload to every other, then receives theirs)
    with our Channel beside bare pyzmq sockets of the same topology (a ROUTER to receive, a
    DEALER per peer), measured in the same run: 2 and 3 processes, over TCP loopback and Unix
    sockets, and with CurveZMQ (ours with its authenticator, raw with the cipher alone). Reports
    the median round, process CPU per round and throughput per party. Writes transport (.csv,
    .md, .png) and, with the experiment, transport_experiment (.csv, .md).
    """
    if min(sizes) < 1:
        raise click.BadParameter(f"{min(sizes)}: a payload is at least 1 byte",
                                 param_hint="'--sizes'")
    placement = "pinned one core per process" if pin else "unpinned"
    click.echo(f"{out.machine}; {placement}; best of {repeats} interleaved runs per case")
    rows = []
    for n, link, security in CASES:
        suffix = ("-curve" if security == "curve" else "") + ("-ipc" if link == "ipc" else "")
        ours, raw = [], []
        for _ in range(repeats):  # interleaved, so drifts of the machine hit both alike
            ours.append(timed_round(n, "ours" + suffix, sizes, not paper, pin))
            raw.append(timed_round(n, "raw" + suffix, sizes, not paper, pin))
        best_ours = [min(rs, key=lambda r: r["median_us"]) for rs in zip(*ours)]
        best_raw = [min(rs, key=lambda r: r["median_us"]) for rs in zip(*raw)]
        for o, r in zip(best_ours, best_raw):
            rows.append(dict(zip(COLUMNS, [
                n, link, security, o["size"], o["median_us"], r["median_us"],
                o["median_us"] / r["median_us"], o["cpu_us"], r["cpu_us"], o["mb_s"], r["mb_s"],
                pin])))
            click.echo(f"{n} procs {link} {security:>5} {o['size']:>8} B: ours "
                       f"{o['median_us']:8.1f} µs, raw {r['median_us']:8.1f} µs, "
                       f"{rows[-1]['ratio']:.2f}x")
    reps = "quick" if not paper else "full"
    note = (f"One round = send the payload to every peer, receive every peer's. ours_us, raw_us: "
            f"median round over the timed rounds ({reps} repetitions after {WARMUP} warm-up "
            f"rounds), the median over processes, best of {repeats} interleaved runs. cpu: "
            "process CPU (all threads) per round per process. Raw CurveZMQ runs without an "
            "authenticator (the cipher alone). " + _goal_note(rows))
    title = f"One exchange round, ours beside raw pyzmq, {placement} ({out.machine})"
    out.table("transport", COLUMNS, [[r[c] for c in COLUMNS] for r in rows], title, note)
    out.figure("transport", _panels(rows), title)
    if experiment:
        raw_round = min(r["raw_us"] for r in rows
                        if (r["procs"], r["link"], r["security"]) == (2, "tcp", "none"))
        exp = curve_cost_on_experiment(repeats, raw_round, out.folder / "runs")
        out.table("transport_experiment", EXPERIMENT_COLUMNS, [exp],
                  f"The default experiment with CurveZMQ and without, median of {repeats} "
                  f"({out.machine})",
                  "ms per iteration: the longest party's protocol wall time over steps. "
                  "vs_rounds_x_raw_round: CurveZMQ's time per iteration over critical rounds x "
                  "the smallest raw 2 process tcp round of this run (goal 3x). busiest: bytes "
                  "sent + received per iteration by the busiest party, dealer traffic included "
                  "(goal 150 KB).")
    click.echo((out.folder / "transport.md").read_text())
