"""`mpcbandit bench serve`: the private online service (`mpcbandit serve`, docs/serve.md) under
an open-loop load, every party its own process on this host, CURVE on: decisions per second
sustained and decision latency per net × offered rate × serve.max_batch, beside the floor
measured in the same run (the decision path's rounds × one one-way delay + serve.batch_ms),
every party's memory, and the share of decisions `serve-replay` recomputes identically.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from mpcbandit.config import Config
from mpcbandit.data.folder import read_id_list
from mpcbandit.data.hannun_data import feature_slices, folder_task
from mpcbandit.data.split import write_split
from mpcbandit.errors import MpcBanditError
from mpcbandit.experiments.common import (Curve, Output, Panel, choice_list, experiment_command,
                                          float_list, int_list, shipped_config, sized_option)
from mpcbandit.experiments.serve_load import Load, LoadOutcome, Request, run_load
from mpcbandit.experiments.serve_service import BenchService, metric
from mpcbandit.experiments.transport import timed_round
from mpcbandit.net.netspec import NET_PRESETS
from mpcbandit.protocols import with_steps
from mpcbandit.protocols.hannun.protocol import ENV, holders
from mpcbandit.protocols.hannun.serve_holder import PULLER, REWARD
from mpcbandit.serve.metrics import DECISION_STAGES

__all__ = ["bench", "COLUMNS", "SEQUENCING_ROUNDS", "load_requests", "loopback_round_ms"]

CONFIG = "hannun-synthetic"
#: the bench's net names: loopback is the config's "none"
NETS = {"loopback": "none", "lan": "lan", "wan": "wan"}
COLUMNS = ["net", "offered_rate", "max_batch", "contexts", "requests", "decisions_per_s",
           "p50_ms", "p95_ms", "p99_ms", "floor_ms", "decision_rounds", "one_way_ms", "rss_mb",
           "agreement", "failed", "client_cpu_ms_per_decision", "parties_cpu_ms_per_decision",
           "wal_fsync_ms", "load_1min"]
#: where a decision's time goes (means over the answered decisions), serve_stages.csv
STAGE_COLUMNS = ["net", "offered_rate", "max_batch", "mean_ms", "slices_ms", "http_ms",
                 "queued_ms", "words_ms", "rounds_ms", "log_ms", "ms_per_round", "one_way_ms",
                 "batch_ms"]
LONG_COLUMNS = ["requests", "rss_mb", "rss_mb_by_party", "agreement", "load_1min"]
#: p′ asks the holders to prepare a batch, and each tells the others (and p′) which slices it
#: has: two one-way delays before a batch's own rounds start (docs/serve-internals.md)
SEQUENCING_ROUNDS = 2
#: the payload of the round that times loopback's one-way delay (a small message of a batch)
ROUND_BYTES = 64


def loopback_round_ms() -> float:
    """One exchange round between two processes over our CurveZMQ channel on loopback (the
    transport bench's helper): what one of the decision path's rounds costs at the least."""
    return timed_round(2, "ours-curve", [ROUND_BYTES], quick=True, pin=False)[0]["median_us"] / 1e3


def wal_fsync_ms(folder: Path, count: int = 21) -> float:
    """One fsync of a small log record in folder (the disk the services' logs are on), the
    median of count: a decision's answer waits for two (its slices' record at the holders,
    the decision's at p′), which the floor does not count."""
    path = folder / ".fsync-probe"
    took = []
    try:
        with open(path, "ab") as f:
            for _ in range(count):
                f.write(b"x" * 100)
                f.flush()
                t0 = time.perf_counter()
                os.fsync(f.fileno())
                took.append(time.perf_counter() - t0)
    finally:
        path.unlink(missing_ok=True)
    return float(np.median(took)) * 1e3


def load_requests(cfg, data_dir: Path, n: int, lookup: bool = False) -> list[Request]:
    """n requests from a data folder (`mpcbandit data split`'s layout): each holder's slice
    and every arm's reward of one row, in the id list's order, again from the first row (the
    ids suffixed by the lap) when n passes the rows. With `lookup` the holders find each
    slice in their own folder by its id: no slice is posted, and n rows are needed."""
    names = holders(cfg.section)
    ids = read_id_list(data_dir / names[0], names[0]).ids
    if lookup and n > len(ids):
        raise click.ClickException(f"bench serve --contexts lookup: {data_dir} holds {len(ids)} "
                                   f"ids, {n} requests need as many (each id is looked up once)")
    # each application posts its slice as its table holds it: the holders apply the norm rule
    raw = with_steps(cfg, len(ids)).with_overrides(['hannun.norms="promise"'])
    task = folder_task(raw, data_dir, names, f"{ENV}.0")
    cols = feature_slices(cfg.section)
    out = []
    for k in range(n):
        t, lap = k % len(ids), k // len(ids)
        out.append(Request.of(ids[t] if lap == 0 else f"{ids[t]}.{lap}",
                              [] if lookup else [task.contexts[t, c] for c in cols],
                              task.rewards[t]))
    return out


def _data(out: Output, data: Path | None, cfg, rows: int) -> Path:
    """The given folder, or the built-in task split into OUT/data (once)."""
    if data is not None:
        return data
    folder = out.folder / "data"
    if not folder.exists():
        write_split(with_steps(cfg, rows), folder)
    return folder


def _percentile_ms(outcome: LoadOutcome, q: float) -> float:
    return float(np.percentile(outcome.latencies, q) * 1e3) if outcome.latencies else float("nan")


def _decision_rounds(svc: BenchService, holder: str) -> float:
    """The rounds of one decision batch at a feature holder (its /metrics), plus the batch's
    sequencing (p′'s prepare, the holders' word on their slices)."""
    text = svc.metrics(holder)
    runs = metric(text, "mpcbandit_op_runs_total", 'op="decide"')
    rounds = metric(text, "mpcbandit_op_rounds_total", 'op="decide"')
    return rounds / runs + SEQUENCING_ROUNDS if runs else float("nan")


def _mean_ms(values: list[float]) -> float:
    return float(np.mean(values) * 1e3) if values else float("nan")


def _stages(svc: BenchService, seen: LoadOutcome, rounds: float) -> dict:
    """Where the answered decisions' time went, means in ms: the client's posting of the
    slices, HTTP (the client's wait for its decision beyond p′'s own latency), p′'s stages
    (/metrics, mpcbandit_decision_stage_seconds) and a decide op's time per round."""
    text = svc.metrics(PULLER)

    def histogram_mean_ms(name: str, labels: str = "") -> float:
        count = metric(text, name + "_count", labels)
        return metric(text, name + "_sum", labels) / count * 1e3 if count else float("nan")

    stages = {f"{s}_ms": histogram_mean_ms("mpcbandit_decision_stage_seconds", f'stage="{s}"')
              for s in DECISION_STAGES}
    asked = [t - b for t, b in zip(seen.latencies, seen.before_asking)]
    return {"mean_ms": _mean_ms(seen.latencies), "slices_ms": _mean_ms(seen.before_asking),
            "http_ms": _mean_ms(asked) - histogram_mean_ms("mpcbandit_decision_latency_seconds"),
            **stages, "ms_per_round": stages["rounds_ms"] / (rounds - SEQUENCING_ROUNDS)}


def _options(net: str, max_batch: int, sets: tuple[str, ...], lookup_in: Path | None) -> list[str]:
    # the dealer reveals its exploration keys at the stop, so that serve-replay recomputes
    # every decision (explored ones too): the agreement column (a --set may change it)
    options = ["--net", NETS[net], "--set", f"serve.max_batch={max_batch}",
               "--set", "hannun.reveal=stop"]
    options += ["--data", str(lookup_in)] if lookup_in is not None else []
    return options + [w for s in sets for w in ("--set", s)]


@dataclass(frozen=True)
class Setup:
    """What every case of one bench shares: its output, config (with --set), requests, the
    rewards' delay, the overrides, the folder the holders look slices up in (--contexts
    lookup; None: the client posts them) and the loopback round timed at the start."""

    out: Output
    cfg: Config
    requests: list[Request]
    reward_delay_ms: float
    sets: tuple[str, ...]
    lookup_in: Path | None
    round_ms: float
    fsync_ms: float

    def service(self, name: str, net: str, max_batch: int) -> BenchService:
        """A new service for one case, in OUT/services/NAME."""
        return BenchService(CONFIG, self.out.folder / "services" / name,
                            _options(net, max_batch, self.sets, self.lookup_in))

    def load(self, rate: float, svc: BenchService) -> Load:
        """The client's load on svc at rate."""
        names = holders(self.cfg.section)
        return Load(tuple(svc.urls[h] for h in names), svc.urls[PULLER],
                    svc.urls[REWARD], rate, self.reward_delay_ms / 1e3,
                    self.cfg.serve.decision_timeout_s + 10.0)


def run_case(setup: Setup, net: str, rate: float, max_batch: int,
             count: int) -> tuple[dict, dict, dict]:
    """One service under one load: its rows of serve.csv and serve_stages.csv, and each
    party's CPU ms per decision."""
    cfg, requests = setup.cfg, setup.requests[:count]
    svc = setup.service(f"{net}-r{rate:g}-b{max_batch}", net, max_batch)
    try:
        cpu0 = svc.cpu_s()
        seen = run_load(requests, setup.load(rate, svc))
        cpu = {p: c - cpu0[p] for p, c in svc.cpu_s().items()}
        rss = max(svc.rss_mb(peak=True).values())
        rounds = _decision_rounds(svc, holders(cfg.section)[0])
        stages = _stages(svc, seen, rounds)
    finally:
        svc.stop()
    report = svc.replay()
    one_way_ms = setup.round_ms if net == "loopback" else NET_PRESETS[NETS[net]][0] * 1e3
    decided = max(1, len(seen.latencies))
    row = dict(zip(COLUMNS, [
        net, rate, max_batch, "lookup" if setup.lookup_in else "post", len(requests),
        seen.sustained_per_s(), _percentile_ms(seen, 50),
        _percentile_ms(seen, 95), _percentile_ms(seen, 99),
        rounds * one_way_ms + cfg.serve.batch_ms, rounds, one_way_ms, rss, report["agreement"],
        sum(seen.failures.values()), seen.cpu_s / decided * 1e3,
        sum(cpu.values()) / decided * 1e3, setup.fsync_ms, round(os.getloadavg()[0], 2)],
        strict=True))
    if seen.failures:
        click.echo(f"  {net}, {rate:g}/s, max_batch {max_batch}: not answered: "
                   f"{dict(seen.failures)}")
    stage_row = {"net": net, "offered_rate": rate, "max_batch": max_batch, **stages,
                 "one_way_ms": one_way_ms, "batch_ms": cfg.serve.batch_ms}
    return row, stage_row, {p: c / decided * 1e3 for p, c in cpu.items()}


def run_long(setup: Setup, rate: float, sizes: list[int]) -> list[list]:
    """One loopback service through max(sizes) requests; every party's memory as the answered
    decisions pass each size (memory flat over 10⁵ requests: the issue's goal)."""
    svc = setup.service("long", "loopback", setup.cfg.serve.max_batch)
    at: dict[int, dict[str, float]] = {}

    def sample(count: int) -> None:
        if count in sizes:
            at[count] = svc.rss_mb()
    try:
        seen = run_load(setup.requests[:max(sizes)], setup.load(rate, svc), sample)
        if len(seen.latencies) not in at:   # some were not answered: the count it reached
            at[len(seen.latencies)] = svc.rss_mb()
    finally:
        svc.stop()
    agreement = svc.replay()["agreement"]
    if seen.failures:
        click.echo(f"  long run: not answered: {dict(seen.failures)}")
    return [[n, max(rss.values()), " ".join(f"{p}={v:.0f}" for p, v in rss.items()),
             agreement, round(os.getloadavg()[0], 2)] for n, rss in sorted(at.items())]


def _panels(rows: list[dict]) -> list[Panel]:
    """Per net: p50 and p99 latency against the offered rate, a line per max_batch, the floor."""
    panels = []
    for net in dict.fromkeys(r["net"] for r in rows):
        curves = []
        for b in dict.fromkeys(r["max_batch"] for r in rows if r["net"] == net):
            case = [r for r in rows if (r["net"], r["max_batch"]) == (net, b)]
            x = [r["offered_rate"] for r in case]
            curves += [Curve(f"p50, max_batch {b}", x, [r["p50_ms"] for r in case]),
                       Curve(f"p99, max_batch {b}", x, [r["p99_ms"] for r in case], dashed=True)]
        floor = {r["offered_rate"]: r["floor_ms"] for r in rows if r["net"] == net}
        curves.append(Curve("floor", list(floor), list(floor.values()), dashed=True,
                            color="black"))
        panels.append(Panel(net, "offered rate (decisions / s)", "decision latency (ms)",
                            curves, logy=True))
    return panels


NOTE = ("decisions_per_s: decisions answered per second over the middle 80 % of the schedule "
        "(open loop: every request starts on its schedule; the offered rate when the service "
        "keeps up). p50/p95/p99: decision latency from the request's scheduled start (both "
        "slices posted, then the decision asked) to its answer. floor_ms: decision_rounds × "
        "one_way_ms + serve.batch_ms; decision_rounds: a decide op's rounds at a feature holder "
        f"(/metrics) + {SEQUENCING_ROUNDS} (p′'s prepare, the holders' word on their slices); "
        "one_way_ms: the net's one-way delay, on loopback one exchange round of our CurveZMQ "
        f"channel between two processes ({ROUND_BYTES} B, timed in this run). rss_mb: the largest "
        "peak resident memory of any party. agreement: the share of decisions `serve-replay` "
        "recomputes identically in float64 (hannun.reveal = stop: the dealer reveals its "
        "exploration keys at the stop). failed: decisions not answered 200 (and contexts "
        "or rewards refused). cpu: the client's process CPU and all parties' CPU per decision. "
        "wal_fsync_ms: one fsync of a small record on the disk of the services' logs, timed in "
        "this run (median of 21): each answer waits for two (the slices' records at the holders, "
        "in parallel, then the decision's at p′), which floor_ms does not count.")


STAGES_NOTE = (
    "Means over the answered decisions. mean_ms: the client's latency (from the request's "
    "scheduled start) = slices_ms + http_ms + queued_ms + words_ms + rounds_ms + log_ms, and the "
    "little between them at p′. slices_ms: posting both holders' slices until both answered "
    "202 (each logged and fsync'd at its holder; with --contexts lookup only the client's "
    "lateness). http_ms: the decision request's HTTP both ways (the client's wait beyond p′'s "
    "own latency). queued_ms: accepted to its batch's start at p′ (the batch window, "
    "batch_ms, and any wait for room: serve.in_flight). words_ms: p′ asks the holders to "
    "prepare the batch until each said which slices it has (their word round). rounds_ms: the "
    "decide op's rounds, to the arms opened at p′. log_ms: the decision's record made "
    "durable at p′, and the answer back at its HTTP side. ms_per_round: rounds_ms over the "
    "decide op's rounds, against one_way_ms, which is what a round costs in the floor: the "
    "rest is the parties' computing, their "
    "waits for a core, and each round's messages through the channel. The floor counts "
    "batch_ms and decision_rounds × one_way_ms; slices, HTTP and the log are outside it.")


@experiment_command("serve", "the default grid (the paper has no service); --long adds 10⁵ "
                    "requests", short_help="The private online service under open-loop load",
                    computed_by="the secure protocol served (`mpcbandit serve --out`, every "
                                "party its own process, CURVE on), an open-loop client beside")
@click.option("--nets", type=choice_list(*NETS), default="loopback,lan,wan",
              help="Networks: loopback, and lan/wan emulated on it (`serve --net`).")
@sized_option("--rates", float_list, [250, 500, 1000], [250, 500, 1000, 1500],
              "Offered rates on loopback and lan, decisions per second.")
@click.option("--wan-rates", type=float_list, default="10,40",
              help="Offered rates on wan (a decision takes 17 one-way delays of 20 ms there).")
@click.option("--max-batch", type=int_list, default="16,64", help="serve.max_batch values.")
@sized_option("--n", int, 1500, 5000, "Decision requests per case (wan: --wan-n).")
@click.option("--wan-n", type=click.IntRange(min=1), default=200,
              help="Decision requests per wan case.")
@click.option("--reward-delay-ms", type=click.FloatRange(min=0), default=200.0,
              help="Each reward is posted this long after its decision was answered.")
@click.option("--data", type=click.Path(file_okay=False, exists=True, path_type=Path),
              default=None, show_default="the built-in task, split into OUT/data",
              help="A data folder in `mpcbandit data split`'s layout for hannun-synthetic: "
                   "the contexts and rewards of the requests.")
@click.option("--contexts", type=click.Choice(["post", "lookup"]), default="post",
              help="post: the client posts both holders' slices before asking for each "
                   "decision; lookup: each holder looks the id up in its own folder of the "
                   "data (`serve --data`) and the client posts only decisions and rewards.")
@click.option("--long", is_flag=True,
              help="Also one loopback service through --long-sizes requests at --long-rate: "
                   "every party's memory at each size (serve_long.csv).")
@click.option("--long-sizes", type=int_list, default="10000,100000",
              help="Answered decisions at which --long samples memory.")
@click.option("--long-rate", type=click.FloatRange(min=1), default=400.0,
              help="The offered rate of the --long run.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", show_default="none",
              help="A config override for every service, e.g. serve.batch_ms=2.")
def bench(out: Output, paper: bool, nets: list[str], rates: list[float], wan_rates: list[float],
          max_batch: list[int], n: int, wan_n: int, reward_delay_ms: float, data: Path | None,
          contexts: str, long: bool, long_sizes: list[int], long_rate: float,
          sets: tuple[str, ...]) -> None:
    """The private online service (`mpcbandit serve`, Hannun: A = 10, D = 20, two feature
    holders, CURVE on) under an open loop client (asyncio and aiohttp, its own CPU reported):
    one service per net × offered rate × serve.max_batch, each request posting both holders'
    slices, asking for the decision and, a given delay later, posting the reward. Reports
    decisions per second sustained, p50/p95/p99 decision latency, the floor measured in the
    same run (the decision path's rounds × the one way delay + serve.batch_ms), every party's
    memory and the share of decisions the float64 replay recomputes identically. Writes serve
    (.csv, .md, .png), serve_cpu (.csv, .md) and, with --long, serve_long (.csv, .md)."""
    try:
        cfg = shipped_config(f"{CONFIG}.toml", list(sets))
    except MpcBanditError as e:
        raise click.ClickException(f"bench serve: --set: {e}") from None
    counts = {net: wan_n if net == "wan" else n for net in nets}
    longest = max([*counts.values()] + (long_sizes if long else []))
    lookup = contexts == "lookup"
    # looked up, every request needs a row of its own; posted, rows are reused past 20,000
    data = _data(out, data, cfg, longest if lookup else min(longest, 20_000))
    setup = Setup(out, cfg, load_requests(cfg, data, longest, lookup), reward_delay_ms, sets,
                  data.resolve() if lookup else None, loopback_round_ms(),
                  wal_fsync_ms(out.folder))
    click.echo(f"{out.machine}; one loopback round of our CurveZMQ channel: "
               f"{setup.round_ms * 1e3:.0f} µs; one fsync of a log record: "
               f"{setup.fsync_ms:.2f} ms")
    rows, stage_rows, cpu_rows = [], [], []
    for net in nets:
        for rate in wan_rates if net == "wan" else rates:
            for b in max_batch:
                row, stages, cpu = run_case(setup, net, rate, b, counts[net])
                rows.append(row)
                stage_rows.append(stages)
                cpu_rows += [[net, rate, b, p, c] for p, c in cpu.items()]
                click.echo(f"{net}, {rate:g}/s offered, max_batch {b}: "
                           f"{row['decisions_per_s']:.0f}/s, p50/p95/p99 {row['p50_ms']:.1f}/"
                           f"{row['p95_ms']:.1f}/{row['p99_ms']:.1f} ms (floor "
                           f"{row['floor_ms']:.1f}), agreement {row['agreement']:.4f}, "
                           f"load {row['load_1min']}")
    title = (f"mpcbandit serve under open-loop load, {CONFIG}, contexts "
             f"{'looked up by the holders' if lookup else 'posted'} ({out.machine})")
    out.table("serve", COLUMNS, [[r[c] for c in COLUMNS] for r in rows], title, NOTE)
    out.table("serve_stages", STAGE_COLUMNS, [[r[c] for c in STAGE_COLUMNS] for r in stage_rows],
              f"Where a decision's time goes, means in ms ({out.machine})", STAGES_NOTE)
    out.table("serve_cpu", ["net", "offered_rate", "max_batch", "party",
                            "cpu_ms_per_decision"], cpu_rows,
              f"Each party's CPU per decision ({out.machine})",
              "Process CPU time (every thread) while the load ran, over decisions answered.")
    out.figure("serve", _panels(rows), title)
    if long:
        long_rows = run_long(setup, long_rate, sorted(long_sizes))
        out.table("serve_long", LONG_COLUMNS, long_rows,
                  f"Every party's memory over a long run at {long_rate:g}/s ({out.machine})",
                  "rss_mb: the largest resident memory of any party as the answered decisions "
                  "pass `requests`.")
