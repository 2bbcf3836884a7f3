"""Figure 5 of Cao et al. 2023: computation relative to centralised LinUCB/LinTS and the AP's
communication in GB, T = 5000, M = 5, K = 100, 500, 1000, against the context dimension d.

Three views:
- analytic: the paper's operation counts (App. C.1, one unit per element op, d^3 per inverse,
  Cholesky and sampling) -> relative cost VFUCB/LinUCB and VFTS/LinTS (panels a, b);
- measured: seconds per round of our implementation (all participants' masking + the AP's
  sum, choice and Sherman-Morrison update, one process, one BLAS thread) over centralised (the same bandit on
  raw contexts); fastest of a few rounds, the two timed alternately;
- communication (panel c): the paper's count T K M d doubles + the d^2 mask (an upper bound:
  it counts the AP's own block as sent), and our measured bytes of a short real O3M run (the
  M-1 PPs' messages to the AP, codec envelopes included) scaled to T, + the mask.
Writes fig_o3m_5.csv and fig_o3m_5.png.

    python scripts/fig_o3m_5_cost.py              # measured for d <= 200
    python scripts/fig_o3m_5_cost.py --paper      # measured for d up to 1000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one BLAS thread: ratios of like with like on a shared box

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.results import write_csv  # noqa: E402
from mpcbandit.bandits.linear import LinearBandit  # noqa: E402
from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.crypto.orthogonal_mask import block_offsets, column_blocks, haar_orthogonal  # noqa: E402
from mpcbandit.mpc.prg import Prg  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
KS = (100, 500, 1000)
T, M = 5000, 5
ANALYTIC_DS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def analytic_ops(algorithm: str, vfl: bool, k: int, d: int, m: int) -> float:
    """Operations per round, App. C.1 (C.1.1-C.1.4), stage by stage."""
    mask = k * d * d + k * m * d if vfl else 0.0                  # Q^j x^j for every arm, sum
    if algorithm == "linucb":
        select = k * d + d ** 3 + k * d * d + k                    # r~, inverse, B~, argmax
        update = d * d + d + d * d                                 # Lambda, u, theta
    else:
        select = d * d + d ** 3 + k * d + k                        # v^2 Lambda^-1, sample, scores
        update = d + d ** 3 + d + d * d                            # Lambda, inverse, u, theta
    return mask + select + update


def partition_of(d: int, m: int) -> list[int]:
    return [d // m + (1 if j < d % m else 0) for j in range(m)]


def measured_seconds(algorithm: str, k: int, d: int, m: int, rounds: int) -> tuple[float, float]:
    """(O3M, central) seconds per round, the fastest of `rounds` rounds each.

    O3M = every participant's masking + the AP's sum, choice and update; central = choice +
    update on the raw contexts. The two are timed alternately round by round and the minimum
    kept, so load from other processes on the shared machine hits both alike.
    """
    rng = np.random.default_rng(0)
    partition = partition_of(d, m)
    blocks = column_blocks(haar_orthogonal(d, Prg()), partition)
    cols = block_offsets(partition)
    x = rng.standard_normal((rounds + 1, k, d)) / np.sqrt(d)
    bandits = {True: LinearBandit(d), False: LinearBandit(d)}
    samplers = {True: np.random.default_rng(1), False: np.random.default_rng(1)}
    times: dict[bool, list[float]] = {True: [], False: []}
    for t in range(rounds + 1):  # round 0 warms up caches, not timed
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


def measured_bytes_per_round(k: int, d: int, m: int) -> float:
    """Bytes the PPs send to the AP per round in a real in-process O3M run (4 rounds)."""
    cfg = load_config(ROOT / "configs" / "o3m-synthetic.toml",
                      ["o3m.iterations=4", f"o3m.arms={k}", f"o3m.participants={m}",
                       f"o3m.partition={partition_of(d, m)}"])
    _, chans = run_protocol_inproc(cfg)
    return chans["ap.0"].stats.op("contexts").bytes_received / 4


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = sorted({r["K"] for r in rows})
    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, alg, name in ((axes[0], "linucb", "VFUCB / LinUCB"), (axes[1], "lints", "VFTS / LinTS")):
        for k in ks:
            a = [r for r in rows if r["algorithm"] == alg and r["K"] == k and r["analytic_ratio"]]
            ax.plot([r["d"] for r in a], [r["analytic_ratio"] for r in a], "-o", label=f"K={k} analytic")
            mm = [r for r in a if r["measured_ratio"]]
            if mm:
                ax.plot([r["d"] for r in mm], [r["measured_ratio"] for r in mm], "--x",
                        label=f"K={k} measured")
        ax.set_xscale("log")
        ax.set_xlabel("d")
        ax.set_ylabel("relative computational cost")
        ax.set_title(f"({'ab'[alg == 'lints']}) {name}")
        ax.legend(fontsize=7)
    ax = axes[2]
    for k in ks:
        a = [r for r in rows if r["algorithm"] == "linucb" and r["K"] == k]
        ax.plot([r["d"] for r in a], [r["comm_gb_paper"] for r in a], "-o", label=f"K={k}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("d")
    ax.set_ylabel(f"GB over T={T} (M={M})")
    ax.set_title("(c) AP communication")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", action="store_true", help="measure up to d = 1000")
    ap.add_argument("--measure-ds", default=None, help="comma list of d to time (default 20,50,100,200)")
    ap.add_argument("--ks", default=None, help="comma list of K (default 100,500,1000)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-figures"))
    args = ap.parse_args(argv)
    ks = tuple(int(v) for v in args.ks.split(",")) if args.ks else KS
    measure = (tuple(int(v) for v in args.measure_ds.split(",")) if args.measure_ds
               else (20, 50, 100, 200, 500, 1000) if args.paper else (20, 50, 100, 200))
    rows = []
    for k in ks:
        for d in sorted(set(ANALYTIC_DS) | set(measure)):
            bytes_paper = 8.0 * (T * k * M * d + d * d)
            measured_b = measured_bytes_per_round(k, d, M) * T + 8.0 * d * d if d in measure else None
            for alg in ("linucb", "lints"):
                ratio = analytic_ops(alg, True, k, d, M) / analytic_ops(alg, False, k, d, M)
                vf_s = c_s = None
                if d in measure:
                    vf_s, c_s = measured_seconds(alg, k, d, M, args.rounds)
                rows.append({"algorithm": alg, "K": k, "d": d, "M": M,
                             "analytic_ratio": ratio if d in ANALYTIC_DS else None,
                             "o3m_s_per_round": vf_s, "central_s_per_round": c_s,
                             "measured_ratio": vf_s / c_s if vf_s else None,
                             "comm_gb_paper": bytes_paper / 1e9,
                             "comm_gb_measured": measured_b / 1e9 if measured_b else None})
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "fig_o3m_5.csv"
    write_csv(csv_path, rows)
    print(f"Figure 5: M = {M}, T = {T}; analytic = App. C op counts, measured = our code, "
          f"fastest of {args.rounds} alternating rounds per cell, one process, load average "
          f"{os.getloadavg()[0]:.2f}")
    print(f"{'alg':<7} {'K':>5} {'d':>5} {'analytic':>9} {'measured':>9} {'O3M s/rd':>10} "
          f"{'central s/rd':>12} {'GB paper':>9} {'GB measured':>11}")
    fmt = lambda v, f: format(v, f) if v is not None else "-"  # noqa: E731
    for r in rows:
        if r["measured_ratio"] is None and r["d"] not in (100, 1000, 5000):
            continue
        print(f"{r['algorithm']:<7} {r['K']:>5} {r['d']:>5} {fmt(r['analytic_ratio'], '9.3f'):>9} "
              f"{fmt(r['measured_ratio'], '9.3f'):>9} {fmt(r['o3m_s_per_round'], '10.5f'):>10} "
              f"{fmt(r['central_s_per_round'], '12.5f'):>12} {r['comm_gb_paper']:>9.3f} "
              f"{fmt(r['comm_gb_measured'], '11.3f'):>11}")
    png = args.out / "fig_o3m_5.png"
    plot(rows, png)
    print(f"wrote {csv_path} and {png}")
    return rows


if __name__ == "__main__":
    main()
