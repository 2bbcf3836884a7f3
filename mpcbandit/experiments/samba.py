"""Ciucanu et al. (2022), SAMBA's Figure 8 as `mpcbandit figure samba-8`: time against N and
K, cumulative rewards, and each role's share of the time.

Every secure point runs all K + 3 parties as real processes (`mpcbandit run`); the
non-secure time is the standard algorithm in one process (the `--plaintext` reference).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

import click
import numpy as np

from mpcbandit.config import Config
from mpcbandit.errors import PartyFailed
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    choice_list,
    experiment_command,
    int_list,
    shipped_config,
    sized_option,
)
from mpcbandit.experiments.samba_relay import relay_ms_per_step
from mpcbandit.launch import pick_base_port, run_local
from mpcbandit.protocols.inproc_runner import inproc_summary
from mpcbandit.protocols.samba.protocol import plaintext

__all__ = ["figure_8", "secure_point", "plaintext_point", "one_process_ms_per_step"]

SIX = ["epsilon-greedy", "epsilon-decreasing", "ucb", "thompson", "softmax", "pursuit"]
DATASETS = ("movielens", "jester", "synthetic")
ROLES = ("controller", "comp", "do", "dc")
#: the paper's Fig. 8 anchors (seconds, N = 10^5): K = 100 and K = 10, Pursuit apart
PAPER_S = {(100, False): "808-976", (100, True): "1688", (10, False): "92-109", (10, True): "190"}
PAPER_N = [50_000, 60_000, 70_000, 80_000, 90_000, 100_000]
PAPER_K = [10, 20, 40, 60, 80, 100]
TIME_COLUMNS = ["dataset", "algorithm", "N", "K", "net", "wall_s", "protocol_s", "core_s",
                "ms_per_step", "est_1e5_s", "cumulative_reward", "load1", "rounds_per_step",
                "plaintext_s", "plaintext_ms_per_step", "paper_1e5_s", "relay_ms_per_step",
                "vs_relay", "one_process_ms_per_step", "one_process_1e5_s"]


def samba_config(dataset: str, algorithm: str, budget: int, arms: int, net: str,
                 extra: list[str]) -> Config:
    """The dataset's shipped config (configs/samba-DATASET.toml) with this point's settings, in
    reproduction mode: each secure point is checked against the standard algorithm (Theorem 2),
    which needs the seeds derived from the config (docs/samba.md)."""
    return shipped_config(f"samba-{dataset}.toml",
                          [f"samba.algorithm={algorithm}", f"samba.budget={budget}",
                           f"samba.arms={arms}", f"run.net={net}", "samba.fresh_seeds=false",
                           *extra])


def secure_point(dataset: str, algorithm: str, budget: int, arms: int, net: str,
                 extra: list[str], attempts: int = 3) -> dict:
    """One secure run with K + 3 processes: wall, core loop, per-step time, CPU per role."""
    for attempt in range(attempts):
        with tempfile.TemporaryDirectory(prefix="samba-bench-") as out:
            load = os.getloadavg()[0]
            ports = [f"network.base_port={pick_base_port('127.0.0.1', arms + 3)}"]
            try:
                cfg = samba_config(dataset, algorithm, budget, arms, net, extra + ports)
                s = run_local(cfg, Path(out), echo=lambda *a: None)
                break
            except PartyFailed as e:  # another process took a port between pick and bind
                if "cannot bind" not in str(e) or attempt == attempts - 1:
                    raise
                click.echo(f"  retrying: {e}")
    steps = budget - arms
    per_step = s["core_s"] / steps
    setup = s["protocol_wall_s"] - s["core_s"]
    return {"dataset": dataset, "algorithm": algorithm, "N": budget, "K": arms, "net": net,
            "wall_s": s["wall_s"], "protocol_s": s["protocol_wall_s"], "core_s": s["core_s"],
            "ms_per_step": 1e3 * per_step, "est_1e5_s": setup + (100_000 - arms) * per_step,
            "cumulative_reward": s["cumulative_reward"], "load1": load,
            "cpu": s["cpu_s_by_role"], "rounds_per_step": s["rounds_total"] / steps}


def one_process_ms_per_step(dataset: str, algorithm: str, budget: int, arms: int,
                            extra: list[str]) -> float:
    """The paper's quantity: ms per step with every party a thread of one process."""
    cfg = samba_config(dataset, algorithm, budget, arms, "none", extra)
    return 1e3 * inproc_summary(cfg)["core_s"] / (budget - arms)


def plaintext_point(dataset: str, algorithm: str, budget: int, arms: int,
                    extra: list[str]) -> tuple[float, dict]:
    """Seconds of the standard algorithm in one process, and its summary."""
    cfg = samba_config(dataset, algorithm, budget, arms, "none", extra)
    t0 = time.perf_counter()
    ref = plaintext(cfg)
    return time.perf_counter() - t0, ref


def time_row(d: str, a: str, n: int, k: int, net: str, extra: list[str],
             one_process: bool) -> tuple[dict, dict]:
    """One point of panels (a), (b): the secure time beside the plaintext reference, the bare
    relay (the transport's floor) and one process (the paper's quantity); CPU per role."""
    row = secure_point(d, a, n, k, net, extra)
    plain_s, ref = plaintext_point(d, a, n, k, extra)
    if ref["cumulative_reward"] != row["cumulative_reward"]:  # Theorem 2
        raise RuntimeError(f"{d} {a} N={n} K={k}: secure reward {row['cumulative_reward']} "
                             f"differs from the plaintext reference's {ref['cumulative_reward']}")
    row["plaintext_s"] = plain_s
    row["plaintext_ms_per_step"] = 1e3 * plain_s / (n - k)
    row["paper_1e5_s"] = PAPER_S.get((k, a == "pursuit"), "")
    row["relay_ms_per_step"] = relay_ms_per_step(k, min(n - k, 2000))
    row["vs_relay"] = row["ms_per_step"] / row["relay_ms_per_step"]
    row["one_process_ms_per_step"] = row["one_process_1e5_s"] = None
    if one_process:
        row["one_process_ms_per_step"] = one_process_ms_per_step(d, a, n, k, extra)
        row["one_process_1e5_s"] = row["one_process_ms_per_step"] * (100_000 - k) / 1e3
    return row, row.pop("cpu")


def reward_rows(d: str, a: str, reward_n: int, k: int, marks: list[int],
                extra: list[str]) -> list[dict]:
    """Cumulative reward at each N of marks, from one plaintext run of reward_n steps (a run of
    budget N is the prefix of it: the same seeds; secure = plaintext by Theorem 2)."""
    _, ref = plaintext_point(d, a, reward_n, k, extra)
    cum = np.cumsum(ref["series"]["rewards"])
    return [{"dataset": d, "algorithm": a, "N": n, "K": k, "cumulative_reward": cum[n - 1].item()}
            for n in marks if n <= reward_n]


def _by_algorithm(rows: list[dict], x: str, y: str, dashed: bool = False) -> list[Curve]:
    curves = []
    for i, alg in enumerate(sorted({r["algorithm"] for r in rows})):
        pts = sorted((r[x], r[y]) for r in rows if r["algorithm"] == alg)
        curves.append(Curve(alg + (" (standard)" if dashed else ""), [p[0] for p in pts],
                            [p[1] for p in pts], dashed=dashed, color=f"C{i}"))
    return curves


def _panels(d: str, times: list[dict], shares: list[dict], rewards: list[dict]) -> list[Panel]:
    """Figure 8's four panels for one dataset (those with points)."""
    t = [r for r in times if r["dataset"] == d]
    kmax = max((r["K"] for r in t), default=0)
    panels = []
    at_k = [dict(r, s=r["core_s"], plain=r["plaintext_s"]) for r in t if r["K"] == kmax]
    if len({r["N"] for r in at_k}) > 1:
        panels.append(Panel(f"(a) {d}, K = {kmax}: time against N", "N",
                            "seconds (steps 2-5; standard: dashed)",
                            _by_algorithm(at_k, "N", "s")
                            + _by_algorithm(at_k, "N", "plain", True)))
    if len({r["K"] for r in t}) > 1:
        panels.append(Panel(f"(b) {d}: time per step against K", "K",
                            "ms per step (standard: dashed)",
                            _by_algorithm(t, "K", "ms_per_step")
                            + _by_algorithm(t, "K", "plaintext_ms_per_step", True)))
    r = [x for x in rewards if x["dataset"] == d]
    if r:
        panels.append(Panel(f"(c) {d}: cumulative reward (secure = standard)", "N",
                            "cumulative reward", _by_algorithm(r, "N", "cumulative_reward")))
    s = [x for x in shares if x["dataset"] == d]
    if s and len({x["K"] for x in s}) > 1:
        ks = sorted({x["K"] for x in s})
        curves = [Curve(role, ks, [statistics.fmean(x["share"] for x in s
                                                    if x["role"] == role and x["K"] == k)
                                   for k in ks]) for role in ROLES]
        panels.append(Panel(f"(d) {d}: share of process CPU by role", "K",
                            "CPU share (data owners together)",
                            curves, logy=False))
    return panels


@experiment_command("samba-8", "N = 5..10 x 10^4 at K = 100, K = 10..100 at N = 10^5, rewards "
                               "to N = 10^5 (hours on 2 cores)",
                    short_help="Fig. 8: SAMBA's time against N and K, rewards, CPU by role",
                    computed_by=("times from the secure protocol (every party its own process); "
                                 "rewards (c) from a float64 run of the standard algorithm, equal "
                                 "to the secure protocol's (Theorem 2; every timed point checks "
                                 "it)"))
@click.option("--datasets", type=choice_list(*DATASETS), default="movielens,jester",
              help="Datasets.")
@click.option("--algorithms", type=choice_list(*SIX), default=",".join(SIX),
              help="Algorithms to run.")
@sized_option("--n-list", int_list, [1100, 2100], PAPER_N,
              "Budgets N of panel (a), at K = --k-max (an empty value skips the panel).")
@sized_option("--k-list", int_list, [10, 100], PAPER_K,
              "Arm counts K of panel (b), at N = --n-for-k (an empty value skips it).")
@click.option("--k-max", type=click.IntRange(min=2), default=100, help="K of panels (a), (c).")
@sized_option("--n-for-k", int, 2100, 100_000, "N of panel (b).")
@sized_option("--reward-n", int, 10_000, 100_000, "Largest N of the reward curves, panel (c) "
                                                  "(0 skips them).")
@click.option("--net", type=click.Choice(["none", "lan", "wan"]), default="none",
              help="Emulated network between the parties.")
@click.option("--paillier-bits", type=click.IntRange(min=256), default=2048,
              help="Paillier key size (below 2048 only for a quick look: marked insecure).")
@click.option("--one-process/--no-one-process", default=True,
              help="Also time every point with every party a thread of one process (the "
                   "paper's quantity).")
def figure_8(out: Output, paper: bool, datasets: list[str], algorithms: list[str],
             n_list: list[int], k_list: list[int], k_max: int, n_for_k: int, reward_n: int,
             net: str, paillier_bits: int, one_process: bool) -> None:
    """Ciucanu et al. (2022), SAMBA Figure 8: (a) time against N, (b) time per step against K,
    (c) cumulative rewards, (d) each role's share of the CPU time.

    Every secure point runs all K + 3 parties as real processes and checks its reward equals
    the standard algorithm's (Theorem 2). The per-step time is the Controller's core loop
    (steps 2-5) over N - K steps, and the 10^5-step time is extrapolated from it (set-up +
    (10^5 - K) x per step). Measured in the same run beside it: the paper's quantity (every
    party a thread of one process, messages in memory; the paper times one process with no
    messaging) and the transport's floor (a bare pyzmq relay of the same messages and process
    count, `mpcbandit bench samba-relay`). Writes times, shares, rewards (.csv, .md) and
    samba_fig8_DATASET.png.
    """
    extra = [f"samba.paillier_bits={paillier_bits}"]
    if paillier_bits < 2048:  # a quick look; the config refuses such keys otherwise
        extra.append("samba.insecure_small_keys=true")
    points = {(d, a, n, k_max) for d in datasets for a in algorithms for n in n_list}
    points |= {(d, a, n_for_k, k) for d in datasets for a in algorithms for k in k_list}
    times, shares = [], []
    for d, a, n, k in sorted(points):
        row, cpu = time_row(d, a, n, k, net, extra, one_process)
        total = sum(cpu.values()) or 1.0
        shares += [{"dataset": d, "algorithm": a, "N": n, "K": k, "role": role,
                    "cpu_s": cpu.get(role, 0.0), "share": cpu.get(role, 0.0) / total,
                    "per_party_share": cpu.get(role, 0.0) / total / (k if role == "do" else 1)}
                   for role in ROLES]
        times.append(row)
        one = (f", one process {row['one_process_ms_per_step']:.2f} ms/step" if one_process
               else "")
        click.echo(f"{d:9s} {a:18s} N={n:6d} K={k:3d}: {row['ms_per_step']:.2f} ms/step secure "
                   f"(relay floor {row['relay_ms_per_step']:.2f}, {row['vs_relay']:.1f}x){one}, "
                   f"{row['plaintext_ms_per_step']:.3f} ms/step standard, est 10^5 steps "
                   f"{row['est_1e5_s']:.0f} s (paper {row['paper_1e5_s'] or '-'}), load "
                   f"{row['load1']:.1f}")
    every = max(reward_n // 5, 1)
    marks = sorted({*n_list, reward_n, *range(every, reward_n + 1, every)})
    rewards = [r for d in (datasets if reward_n > 0 else []) for a in algorithms
               for r in reward_rows(d, a, reward_n, k_max, marks, extra)]
    if times:
        out.table("times", TIME_COLUMNS, [[r[c] for c in TIME_COLUMNS] for r in times],
                  f"SAMBA Figure 8 (a, b): seconds, net {net} ({out.machine})")
        out.table("shares", list(shares[0]), [list(r.values()) for r in shares],
                  "SAMBA Figure 8 (d): share of process CPU time by role")
    if rewards:
        out.table("rewards", list(rewards[0]), [list(r.values()) for r in rewards],
                  "SAMBA Figure 8 (c): cumulative reward (secure = standard, Theorem 2)")
        for r in rewards:
            if r["N"] == reward_n:
                click.echo(f"{r['dataset']:9s} {r['algorithm']:18s} cumulative reward at "
                           f"N = {reward_n}: {r['cumulative_reward']}")
    for d in datasets:
        panels = _panels(d, times, shares, rewards)
        if panels:
            out.figure(f"samba_fig8_{d}", panels,
                       f"SAMBA (Ciucanu et al.) Figure 8, {d}: {', '.join(algorithms)}; net "
                       f"{net}, Paillier {paillier_bits} bits ({out.machine})")
