"""Figure 8 of SAMBA (Ciucanu et al. 2022): time vs N and vs K, cumulative rewards, time shares.

Every secure point runs all K + 3 parties as real processes (``mpcbandit run``); the
non-secure time is the standard algorithm in one process (``--plaintext`` reference).
Reduced sizes by default (this machine is shared); ``--paper`` runs the paper's sizes.
The per-step time is the Controller's core loop (steps 2-5) divided by N - K, and the
10^5-step time is extrapolated from it (set-up + (10^5 - K) x per-step). Two comparisons,
each measured in the same run:

- the paper's quantity beside the paper's figure: the paper times one process running every
  party's computation (crypto included, no messaging); ``one_process_ms_per_step`` runs every
  party as a thread of one process, messages passed in memory (``--no-one-process`` skips it);
- the distributed time beside its floor: ``relay_ms_per_step`` is a bare pyzmq relay of the
  same message pattern and process count (scripts/bench_zmq_relay.py), run right after.

    python scripts/bench_samba.py                       # reduced, both datasets, six algorithms
    python scripts/bench_samba.py --net lan --algorithms ucb
    python scripts/bench_samba.py --paper               # N = 5..10 x 10^4, K = 10..100
Writes times.csv, rewards.csv, shares.csv in --out; plot with scripts/plot_samba_figure8.py.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.errors import PartyFailed  # noqa: E402
from mpcbandit.launch import pick_base_port, run_local  # noqa: E402
from mpcbandit.protocols import get_protocol  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402
from mpcbandit.protocols.samba import plaintext  # noqa: E402
from mpcbandit.results import write_csv  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_zmq_relay import relay_ms_per_step  # noqa: E402

SIX = ["epsilon-greedy", "epsilon-decreasing", "ucb", "thompson", "softmax", "pursuit"]
CONFIGS = {"movielens": REPO / "configs" / "samba-movielens.toml",
           "jester": REPO / "configs" / "samba-jester.toml",
           "synthetic": REPO / "configs" / "samba-synthetic.toml"}
# the paper's Fig. 8 anchors (seconds, N = 10^5): K = 100 and K = 10, Pursuit separately
PAPER_S = {(100, False): "808-976", (100, True): "1688", (10, False): "92-109", (10, True): "190"}
PAPER_N = [50_000, 60_000, 70_000, 80_000, 90_000, 100_000]
PAPER_K = [10, 20, 40, 60, 80, 100]


def _config(dataset: str, algorithm: str, budget: int, arms: int, net: str, extra: list[str]):
    """The dataset's shipped config with this point's settings."""
    return load_config(CONFIGS[dataset], [f"samba.algorithm={algorithm}", f"samba.budget={budget}",
                                          f"samba.arms={arms}", f"run.net={net}", *extra])


def secure_point(dataset: str, algorithm: str, budget: int, arms: int, net: str,
                 extra: list[str], attempts: int = 3) -> dict:
    """One secure run with K + 3 processes: wall, core loop, per-step time, CPU per role."""
    for attempt in range(attempts):
        with tempfile.TemporaryDirectory(prefix="samba-bench-") as out:
            load = os.getloadavg()[0]
            ports = [f"network.base_port={pick_base_port('127.0.0.1', arms + 3)}"]
            try:
                cfg = _config(dataset, algorithm, budget, arms, net, extra + ports)
                s = run_local(cfg, Path(out), echo=lambda *a: None)
                break
            except PartyFailed as e:
                if "cannot bind" not in str(e) or attempt == attempts - 1:
                    raise
                print(f"  retrying: {e}", flush=True)
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
    cfg = _config(dataset, algorithm, budget, arms, "none", extra)
    results, _ = run_protocol_inproc(cfg)
    return 1e3 * get_protocol("samba").summarize(cfg, results)["core_s"] / (budget - arms)


def plaintext_point(dataset: str, algorithm: str, budget: int, arms: int,
                    extra: list[str]) -> tuple[float, dict]:
    """Seconds of the standard algorithm in one process, and its summary."""
    cfg = _config(dataset, algorithm, budget, arms, "none", extra)
    t0 = time.perf_counter()
    ref = plaintext(cfg)
    return time.perf_counter() - t0, ref


def _write(path: Path, rows: list[dict]) -> None:
    if not rows:
        return
    write_csv(path, rows)


def _table(rows: list[dict], cols: list[str]) -> str:
    fmt = {c: (lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)) for c in cols}
    cells = [[fmt[c](r[c]) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    line = lambda vals: "  ".join(v.rjust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join([line(cols)] + [line(r) for r in cells])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--paper", action="store_true", help="the paper's sizes (hours on 2 cores)")
    ap.add_argument("--datasets", nargs="+", default=["movielens", "jester"], choices=sorted(CONFIGS))
    ap.add_argument("--algorithms", nargs="+", default=SIX, choices=SIX)
    ap.add_argument("--n-list", nargs="*", type=int, default=[1100, 2100],
                    help="budgets N for (a) at K = --k-max (reduced default)")
    ap.add_argument("--k-list", nargs="*", type=int, default=[10, 100],
                    help="arm counts K for (b) at N = --n-for-k")
    ap.add_argument("--k-max", type=int, default=100)
    ap.add_argument("--n-for-k", type=int, default=2100)
    ap.add_argument("--reward-n", type=int, default=10_000, help="largest N of the reward curves (c)")
    ap.add_argument("--net", default="none", help="none | lan | wan")
    ap.add_argument("--paillier-bits", type=int, default=2048)
    ap.add_argument("--out", type=Path, default=REPO / "results" / "samba")
    ap.add_argument("--no-one-process", dest="one_process", action="store_false",
                    help="skip the one-process run of every point (the paper's quantity)")
    args = ap.parse_args(argv)
    if args.paper:
        args.n_list, args.k_list, args.n_for_k, args.reward_n = PAPER_N, PAPER_K, 100_000, 100_000
    extra = [f"samba.paillier_bits={args.paillier_bits}"]
    if args.paillier_bits < 2048:  # a quick look; the config refuses such keys otherwise
        extra.append("samba.insecure_small_keys=true")
    args.out.mkdir(parents=True, exist_ok=True)

    points = {(d, a, n, args.k_max) for d in args.datasets for a in args.algorithms for n in args.n_list}
    points |= {(d, a, args.n_for_k, k) for d in args.datasets for a in args.algorithms for k in args.k_list}
    times, shares = [], []
    for d, a, n, k in sorted(points):
        row = secure_point(d, a, n, k, args.net, extra)
        plain_s, ref = plaintext_point(d, a, n, k, extra)
        assert ref["cumulative_reward"] == row["cumulative_reward"], (d, a, n, k)  # Theorem 2
        row["plaintext_s"] = plain_s
        row["plaintext_ms_per_step"] = 1e3 * plain_s / (n - k)
        row["paper_1e5_s"] = PAPER_S.get((k, a == "pursuit"), "")
        row["relay_ms_per_step"] = relay_ms_per_step(k, min(n - k, 2000))
        row["vs_relay"] = row["ms_per_step"] / row["relay_ms_per_step"]
        if args.one_process:
            row["one_process_ms_per_step"] = one_process_ms_per_step(d, a, n, k, extra)
            row["one_process_1e5_s"] = row["one_process_ms_per_step"] * (100_000 - k) / 1e3
        cpu = row.pop("cpu")
        total = sum(cpu.values()) or 1.0
        for role in ("controller", "comp", "do", "dc"):
            shares.append({"dataset": d, "algorithm": a, "N": n, "K": k, "role": role,
                           "cpu_s": cpu.get(role, 0.0), "share": cpu.get(role, 0.0) / total,
                           "per_party_share": cpu.get(role, 0.0) / total / (k if role == "do" else 1)})
        times.append(row)
        one = (f", one process {row['one_process_ms_per_step']:.2f} ms/step"
               if args.one_process else "")
        print(f"{d:9s} {a:18s} N={n:6d} K={k:3d}: {row['ms_per_step']:.2f} ms/step secure "
              f"(relay floor {row['relay_ms_per_step']:.2f}, {row['vs_relay']:.1f}x){one}, "
              f"{row['plaintext_ms_per_step']:.3f} ms/step plaintext, est 1e5 {row['est_1e5_s']:.0f} s "
              f"(paper {row['paper_1e5_s'] or '-'}), load {row['load1']:.1f}", flush=True)
    _write(args.out / "times.csv", times)
    _write(args.out / "shares.csv", shares)

    rewards = []
    step = max(args.reward_n // 5, 1)
    marks = sorted({*args.n_list, args.reward_n, *range(step, args.reward_n + 1, step)})
    for d in args.datasets if args.reward_n > 0 else []:  # --reward-n 0: no reward curve
        for a in args.algorithms:
            _, ref = plaintext_point(d, a, args.reward_n, args.k_max, extra)
            cum, total = [], 0
            for r in ref["series"]["rewards"]:
                total += r
                cum.append(total)
            for n in marks:  # a run with budget n is the prefix of this one (same seeds)
                if n <= args.reward_n:
                    rewards.append({"dataset": d, "algorithm": a, "N": n, "K": args.k_max,
                                    "cumulative_reward": cum[n - 1]})
    _write(args.out / "rewards.csv", rewards)

    print("\nFigure 8 (a)/(b): seconds; est_1e5_s extrapolates the measured per-step time")
    one = ["one_process_ms_per_step", "one_process_1e5_s"] if args.one_process else []
    print(_table(times, ["dataset", "algorithm", "N", "K", "net", "ms_per_step", "relay_ms_per_step",
                         "vs_relay", "est_1e5_s", *one, "paper_1e5_s", "plaintext_ms_per_step",
                         "load1"]))
    print("\nFigure 8 (c): cumulative reward (secure = plaintext, Theorem 2)")
    print(_table([r for r in rewards if r["N"] == args.reward_n], ["dataset", "algorithm", "N", "K",
                                                                   "cumulative_reward"]))
    print("\nFigure 8 (d): share of process CPU time by role (all DOs together, and per DO)")
    print(_table(shares, ["dataset", "algorithm", "N", "K", "role", "cpu_s", "share", "per_party_share"]))
    print(f"\nCSV in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
