"""Cao et al. (2023), Figure 5: O3M's cost against centralised LinUCB / LinTS, as
`mpcbandit figure o3m-5`.

Three views of one quantity: the paper's operation counts (App. C.1), our measured seconds per
step of the same work, and the active party's traffic (the paper's count and our bytes).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor

import click
import numpy as np

from mpcbandit.bandits.linear import LinearBandit
from mpcbandit.crypto.orthogonal_mask import (
    block_offsets,
    column_blocks,
    haar_orthogonal,
)
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    choice_list,
    experiment_command,
    int_list,
    or_dash,
    shipped_config,
    sized_option,
)
from mpcbandit.launch import run_local
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

__all__ = ["figure_5", "round_time", "analytic_ops", "measured_seconds", "measured_bytes_per_step"]

STEPS, PARTIES = 5000, 5  # the paper's T and M
ANALYTIC_DS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000)
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
COLUMNS = ["algorithm", "K", "d", "M", "analytic_ratio", "o3m_s_per_round",
           "central_s_per_round", "measured_ratio", "comm_gb_paper", "comm_gb_measured"]


def analytic_ops(algorithm: str, vfl: bool, k: int, d: int, m: int) -> float:
    """Operations per step, App. C.1 (C.1.1-C.1.4), stage by stage."""
    mask = k * d * d + k * m * d if vfl else 0.0                  # Q^j x^j for every arm, sum
    if algorithm == "linucb":
        select = k * d + d ** 3 + k * d * d + k                    # r~, inverse, B~, argmax
        update = d * d + d + d * d                                 # Lambda, u, theta
    else:
        select = d * d + d ** 3 + k * d + k                        # v^2 Lambda^-1, sample, scores
        update = d + d ** 3 + d + d * d                            # Lambda, inverse, u, theta
    return mask + select + update


def partition_of(d: int, m: int) -> list[int]:
    """d features split over m parties as evenly as they go."""
    return [d // m + (1 if j < d % m else 0) for j in range(m)]


def measured_seconds(algorithm: str, k: int, d: int, m: int, steps: int) -> tuple[float, float]:
    """(O3M, central) seconds per step, the fastest of `steps` steps each.

    O3M = every participant's masking + the AP's sum, choice and update; central = choice and
    update on the raw contexts. The two alternate step by step and the minimum is kept, so load
    from other processes hits both alike.
    """
    rng = np.random.default_rng(0)
    partition = partition_of(d, m)
    blocks = column_blocks(haar_orthogonal(d, Prg()), partition)
    cols = block_offsets(partition)
    x = rng.standard_normal((steps + 1, k, d)) / np.sqrt(d)
    bandits = {True: LinearBandit(d), False: LinearBandit(d)}
    samplers = {True: np.random.default_rng(1), False: np.random.default_rng(1)}
    times: dict[bool, list[float]] = {True: [], False: []}
    for t in range(steps + 1):  # step 0 warms the caches, not timed
        for vfl in (True, False):
            bandit = bandits[vfl]
            start = time.perf_counter()
            ctx = sum(x[t][:, a:b] @ q.T for (a, b), q in zip(cols, blocks)) if vfl else x[t]
            arm = (bandit.choose_ucb(ctx, 0.5) if algorithm == "linucb"
                   else bandit.choose_ts_scores(ctx, 0.01, samplers[vfl]))
            bandit.update(ctx[arm], 0.1)
            if t:
                times[vfl].append(time.perf_counter() - start)
    return min(times[True]), min(times[False])


def measured_bytes_per_step(k: int, d: int, m: int) -> float:
    """Bytes the passive participants send the AP per step in a real O3M run (4 steps)."""
    cfg = shipped_config("o3m-synthetic.toml", ["o3m.iterations=4", f"o3m.arms={k}",
                                            f"o3m.participants={m}",
                                            f"o3m.partition={partition_of(d, m)}"])
    _, chans = run_protocol_inproc(cfg)
    return chans["ap.0"].stats.op("contexts").bytes_received / 4


@contextlib.contextmanager
def one_blas_thread():
    """A worker process whose BLAS runs one thread (read when its numpy loads): timings of like
    with like, whatever this process's BLAS does."""
    saved = {v: os.environ.get(v) for v in BLAS_THREADS}
    os.environ.update({v: "1" for v in BLAS_THREADS})
    try:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            pool.submit(int).result()  # start it while the variables are set
            yield pool
    finally:
        for v, value in saved.items():
            if value is None:
                os.environ.pop(v, None)
            else:
                os.environ[v] = value


def _ratio_curves(rows: list[dict], alg: str) -> list[Curve]:
    curves = []
    for i, k in enumerate(sorted({r["K"] for r in rows})):
        mine = [r for r in rows if r["algorithm"] == alg and r["K"] == k]
        counted = [r for r in mine if r["analytic_ratio"] is not None]
        timed = [r for r in mine if r["measured_ratio"] is not None]
        color = f"C{i}"
        curves.append(Curve(f"K = {k}, counted (App. C.1)", [r["d"] for r in counted],
                            [r["analytic_ratio"] for r in counted], color=color))
        if timed:
            curves.append(Curve(f"K = {k}, measured", [r["d"] for r in timed],
                                [r["measured_ratio"] for r in timed], dashed=True, color=color))
    return curves


@experiment_command("o3m-5", "our times for d up to 1000 at K = 100, 500, 1000",
                    short_help="Fig. 5: O3M's computation and traffic against central",
                    computed_by=("counted: the paper's operation counts (no run); measured: O3M's "
                                 "masking, sum, choice and update timed in one process, not the "
                                 "secure protocol's processes; bytes: a short run of the secure "
                                 "protocol (parties as threads) scaled to T"))
@sized_option("--measure-ds", int_list, [20, 50, 100, 200], [20, 50, 100, 200, 500, 1000],
              "The d at which our code is timed and its bytes counted (the counts cover "
              f"d = {', '.join(map(str, ANALYTIC_DS))} always).")
@click.option("--ks", type=int_list, default="100,500,1000", help="The values of K.")
@click.option("--rounds", type=click.IntRange(min=1), default=7,
              help="Timed steps per cell; the fastest is kept.")
def figure_5(out: Output, paper: bool, measure_ds: list[int], ks: list[int], rounds: int) -> None:
    """Cao et al. (2023), Figure 5: O3M's computation relative to centralised LinUCB / LinTS,
    and the active party's communication, T = 5000, M = 5, against d.

    Counted: the paper's operation counts (App. C.1: one unit per element operation, d^3 per
    inverse, Cholesky and sampling), panels (a) and (b). Measured: our seconds per step of the
    same work (every participant's masking, the AP's sum, choice and Sherman-Morrison update)
    over the centralised bandit on raw contexts, in one worker process with one BLAS thread,
    the two alternating step by step, the fastest of --rounds kept. Communication, panel (c):
    the paper's count T K M d doubles + the d^2 mask (an upper bound: it counts the AP's own
    block as sent) and our bytes of a short real O3M run (codec envelopes included) scaled to
    T, + the mask. Writes o3m_fig5 (.csv, .md, .png).
    """
    rows = []
    with one_blas_thread() as pool:
        for k in ks:
            for d in sorted(set(ANALYTIC_DS) | set(measure_ds)):
                timed = d in measure_ds
                sent = (measured_bytes_per_step(k, d, PARTIES) * STEPS + 8.0 * d * d
                        if timed else None)
                for alg in ("linucb", "lints"):
                    o3m_s, central_s = (pool.submit(measured_seconds, alg, k, d, PARTIES,
                                                    rounds).result() if timed else (None, None))
                    rows.append({
                        "algorithm": alg, "K": k, "d": d, "M": PARTIES,
                        "analytic_ratio": (analytic_ops(alg, True, k, d, PARTIES)
                                           / analytic_ops(alg, False, k, d, PARTIES)
                                           if d in ANALYTIC_DS else None),
                        "o3m_s_per_round": o3m_s, "central_s_per_round": central_s,
                        "measured_ratio": o3m_s / central_s if timed else None,
                        "comm_gb_paper": 8.0 * (STEPS * k * PARTIES * d + d * d) / 1e9,
                        "comm_gb_measured": sent / 1e9 if timed else None})
    out.table("o3m_fig5", COLUMNS, [[r[c] for c in COLUMNS] for r in rows],
              f"O3M Figure 5: M = {PARTIES}, T = {STEPS}; measured on {out.machine}")
    click.echo(f"{'alg':<7} {'K':>5} {'d':>5} {'counted':>9} {'measured':>9} {'O3M s':>10} "
               f"{'central s':>10} {'GB paper':>9} {'GB ours':>9}")
    for r in rows:
        if r["measured_ratio"] is not None or r["d"] in (1000, 5000):
            click.echo(f"{r['algorithm']:<7} {r['K']:>5} {r['d']:>5} "
                       f"{or_dash(r['analytic_ratio'], '9.3f')} "
                       f"{or_dash(r['measured_ratio'], '9.3f')} "
                       f"{or_dash(r['o3m_s_per_round'], '10.5f')} "
                       f"{or_dash(r['central_s_per_round'], '10.5f')} {r['comm_gb_paper']:>9.3f} "
                       f"{or_dash(r['comm_gb_measured'], '9.3f')}")
    comm = []
    for i, k in enumerate(sorted(set(ks))):
        mine = [r for r in rows if r["algorithm"] == "linucb" and r["K"] == k]
        comm.append(Curve(f"K = {k}, the paper's count", [r["d"] for r in mine],
                          [r["comm_gb_paper"] for r in mine], color=f"C{i}"))
        timed = [r for r in mine if r["comm_gb_measured"] is not None]
        if timed:
            comm.append(Curve(f"K = {k}, our bytes", [r["d"] for r in timed],
                              [r["comm_gb_measured"] for r in timed], dashed=True, color=f"C{i}"))
    out.figure("o3m_fig5", [
        Panel("(a) VFUCB / LinUCB", "d", "relative computational cost",
              _ratio_curves(rows, "linucb"), logx=True, logy=False),
        Panel("(b) VFTS / LinTS", "d", "relative computational cost",
              _ratio_curves(rows, "lints"), logx=True, logy=False),
        Panel(f"(c) the AP's traffic over T = {STEPS}", "d", "GB", comm, logx=True, logy=True)],
        f"O3M (Cao et al.) Figure 5: M = {PARTIES}, T = {STEPS}; measured: fastest of {rounds} "
        f"alternating steps, one process, one BLAS thread ({out.machine})")


ROUND_COLUMNS = ["algorithm", "iterations", "parties", "net", "wall_s", "protocol_wall_s",
                 "seconds_per_round", "plaintext_seconds_per_round", "rounds_per_iteration",
                 "bytes_per_iteration", "same_arms", "max_theta_norm_diff", "cumulative_regret"]


@experiment_command("o3m-round-time", "T = 5000, LinUCB and LinTS",
                    short_help="Seconds per step of O3M, every party a process")
@sized_option("--iterations", int, 1000, 5000, "T, bandit steps per run.")
@sized_option("--algorithms", choice_list("linucb", "lints"), ["linucb"], ["linucb", "lints"],
              "Algorithms to run.")
@click.option("--net", type=click.Choice(["none", "lan", "wan"]), default="none",
              help="Emulated network between the parties.")
@click.option("--config", "config_name", default="o3m-synthetic.toml",
              help="The shipped config the runs start from (under configs/).")
def round_time(out: Output, paper: bool, iterations: int, algorithms: list[str], net: str,
               config_name: str) -> None:
    """Seconds per step of the full O3M protocol with every party its own OS process (PMG, AP,
    passive participants, environment), as `mpcbandit run` starts them, beside the plaintext
    reference of the same config.

    Prints wall and protocol seconds, seconds per step (the AP's protocol time / T), rounds and
    bytes per step, and whether the arms equal the plaintext run's. Each run's own folder
    (summary, logs) is kept under --out. Writes round_time (.csv, .md).
    """
    rows = []
    for alg in algorithms:
        sets = [f"o3m.algorithm={alg}", f"run.net={net}", f"o3m.iterations={iterations}"]
        secure = run_local(shipped_config(config_name, sets), out.folder / f"{alg}-secure",
                           echo=lambda *a, **k: None)
        plain = run_local(shipped_config(config_name, sets), out.folder / f"{alg}-plain",
                          plaintext=True, echo=lambda *a, **k: None)
        diff = np.abs(np.subtract(secure["series"]["theta_norm"], plain["series"]["theta_norm"]))
        rows.append({"algorithm": alg, "iterations": secure["steps"],
                     "parties": len(secure["parties"]), "net": net, "wall_s": secure["wall_s"],
                     "protocol_wall_s": secure["protocol_wall_s"],
                     "seconds_per_round": secure["seconds_per_step"],
                     "plaintext_seconds_per_round": plain["protocol_wall_s"] / plain["steps"],
                     "rounds_per_iteration": secure["rounds_per_step"],
                     "bytes_per_iteration": secure["bytes_per_step"],
                     "same_arms": secure["series"]["arms"] == plain["series"]["arms"],
                     "max_theta_norm_diff": float(diff.max()),
                     "cumulative_regret": secure.get("cumulative_regret")})
    click.echo(f"O3M, full multi-process protocol ({config_name}), {out.machine}")
    click.echo(f"{'alg':<7} {'T':>5} {'procs':>5} {'wall s':>7} {'proto s':>8} {'s/step':>9} "
               f"{'plain s/st':>10} {'rounds/st':>9} {'KB/st':>7} {'same arms':>9} "
               f"{'max dnorm':>9}")
    for r in rows:
        click.echo(f"{r['algorithm']:<7} {r['iterations']:>5} {r['parties']:>5} "
                   f"{r['wall_s']:>7.2f} {r['protocol_wall_s']:>8.3f} "
                   f"{r['seconds_per_round']:>9.6f} {r['plaintext_seconds_per_round']:>10.6f} "
                   f"{r['rounds_per_iteration']:>9.2f} {r['bytes_per_iteration'] / 1e3:>7.1f} "
                   f"{str(r['same_arms']):>9} {r['max_theta_norm_diff']:>9.1e}")
    out.table("round_time", ROUND_COLUMNS, [[r[c] for c in ROUND_COLUMNS] for r in rows],
              f"O3M as real processes ({config_name}, net {net}, {out.machine})")
