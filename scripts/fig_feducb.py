"""Dubey & Pentland (2020) Figure 1 for centralized FedUCB: CSV + PNG per panel, table printed.

(A) average per-agent regret after T rounds vs epsilon, M = 10, 20, 50, 100 (d = 10, delta = 0.1,
    n = O(M log T));
(B) per-agent regret curves for n = O(M^1.5), O(M log T), O(MT), private (eps = 1) vs not;
(C) per-agent regret curves for several d (eps = 1, delta = 0.1, n = O(M log T)).
Runs the protocol's maths in-process (`simulate_centralized`, the same FedEstimators and
PRIVATIZER as the agent processes; a test checks they give the same arms). Reduced sizes by
default; `--paper` uses the paper's (T = 10^7, M = 100, d up to 128, 100 runs: days of CPU).

    python scripts/fig_feducb.py [--panel A|B|C|all] [--out runs/fig-feducb] [--paper] [--beta B]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's mpcbandit

from mpcbandit.bandits.feducb import simulate_centralized, sync_rounds_of
from mpcbandit.dp.accounting import privacy_params
from mpcbandit.dp.noise import seeded_source

REDUCED = {"horizon": 1000, "agents_a": [10, 20, 50, 100], "eps_a": [0.1, 1.0, 10.0, 100.0, 1e3, 1e4],
           "agents_bc": 20, "dims": 10, "dims_c": [4, 8, 16, 32], "actions": 10, "runs": 1}
PAPER = {"horizon": 10**7, "agents_a": [10, 20, 50, 100], "eps_a": [0.1, 0.3, 1.0, 3.0, 10.0],
        "agents_bc": 100, "dims": 10, "dims_c": [8, 16, 32, 64, 128], "actions": 10, "runs": 100}
SCHEDULE_NAMES = {"m1.5": "O(M^1.5)", "mlogt": "O(M log T)", "mt": "O(MT)"}


def run_feducb(*, agents: int, dims: int, actions: int, horizon: int, epsilon: float,
               noise: str, schedule: str, seed: int, delta: float = 0.1,
               beta: float | None = None) -> tuple[np.ndarray, np.ndarray, int]:
    """Per-agent cumulative regret curves of one run and of a random choice, and its sync count."""
    releases = len(sync_rounds_of(schedule, agents, horizon))
    params = privacy_params(noise, epsilon=epsilon, delta=delta, dims=dims, releases=releases,
                            union_factor=agents, delta_log_c=2.0)
    out = simulate_centralized(agents=agents, dims=dims, actions=actions, horizon=horizon,
                               params=params, schedule=schedule, threshold=0.0, seed=seed,
                               source=lambda i: seeded_source(seed, f"fig-feducb/agent{i}"),
                               beta=beta)
    return (np.cumsum(out["regret"]) / agents, np.cumsum(out["random_regret"]) / agents,
            len(out["sync_at"]))


def _mean_curve(runs: int, **kw) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Mean and std over runs of the per-agent regret curve, the random curve's mean, syncs."""
    curves, randoms, syncs = zip(*(run_feducb(seed=r + 1, **kw) for r in range(runs)))
    return np.mean(curves, axis=0), np.std(curves, axis=0), np.mean(randoms, axis=0), syncs[0]


def _write_csv(path: Path, header: list[str], rows: list[list]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def _checkpoints(horizon: int, points: int = 50) -> np.ndarray:
    return np.unique(np.linspace(1, horizon, min(points, horizon)).astype(int))


def _beta_note(sz: dict) -> str:
    """The radius a figure used, for its title: a tuned one is declared, Prop. 2's is not."""
    return "" if sz["beta"] is None else f", tuned beta = {sz['beta']:g}"


def panel_a(sz: dict, out: Path) -> list[list]:
    rows = []
    for m in sz["agents_a"]:
        for eps in sz["eps_a"]:
            t0 = time.perf_counter()
            curve, std, rand, syncs = _mean_curve(
                sz["runs"], agents=m, dims=sz["dims"], actions=sz["actions"], horizon=sz["horizon"],
                epsilon=eps, noise="gaussian", schedule="mlogt", beta=sz["beta"])
            rows.append([m, eps, sz["horizon"], sz["runs"], round(float(curve[-1]), 3),
                         round(float(std[-1]), 3), round(float(rand[-1]), 3), syncs,
                         round(time.perf_counter() - t0, 2)])
            print(f"A  M={m:<4} eps={eps:<6g} per-agent regret {curve[-1]:9.2f} +- {std[-1]:.2f}"
                  f"  random {rand[-1]:.2f}  syncs {syncs}")
    _write_csv(out / "fig1a_regret_vs_eps.csv",
               ["agents", "epsilon", "horizon", "runs", "per_agent_regret", "std",
                "random_per_agent_regret", "sync_rounds", "seconds"], rows)
    series = {f"M = {m}": ([r[1] for r in rows if r[0] == m], [r[4] for r in rows if r[0] == m])
              for m in sz["agents_a"]}
    series["uniformly random"] = ([r[1] for r in rows if r[0] == sz["agents_a"][0]],
                                  [r[6] for r in rows if r[0] == sz["agents_a"][0]])
    _plot(out / "fig1a_regret_vs_eps.png", f"(A) Privacy budget, T = {sz['horizon']}{_beta_note(sz)}",
          "epsilon", "per-agent regret after T", series, logx=True, dashed=lambda k: k.endswith("random"))
    return rows


def panel_b(sz: dict, out: Path) -> list[list]:
    rows, series, ts = [], {}, _checkpoints(sz["horizon"])
    for schedule, name in SCHEDULE_NAMES.items():
        for noise in ("gaussian", "none"):
            curve, _, rand, syncs = _mean_curve(sz["runs"], agents=sz["agents_bc"], dims=sz["dims"],
                                                actions=sz["actions"], horizon=sz["horizon"], epsilon=1.0,
                                                noise=noise, schedule=schedule, beta=sz["beta"])
            label = f"n = {name}, {'private' if noise != 'none' else 'non-private'}"
            series[label] = (ts, curve[ts - 1])
            rows += [[schedule, noise, syncs, int(t), round(float(curve[t - 1]), 3),
                      round(float(rand[t - 1]), 3)] for t in ts]
            print(f"B  {label:<34} per-agent regret {curve[-1]:9.2f}  syncs {syncs}")
    series["uniformly random"] = (ts, rand[ts - 1])
    _write_csv(out / "fig1b_communication.csv",
               ["schedule", "noise", "sync_rounds", "t", "per_agent_regret", "random_per_agent_regret"],
               rows)
    _plot(out / "fig1b_communication.png", f"(B) Communication, M = {sz['agents_bc']}{_beta_note(sz)}", "T",
          "per-agent regret", series, dashed=lambda k: "non-private" in k or k.endswith("random"))
    return rows


def panel_c(sz: dict, out: Path) -> list[list]:
    rows, series, ts = [], {}, _checkpoints(sz["horizon"])
    for d in sz["dims_c"]:
        curve, _, rand, syncs = _mean_curve(sz["runs"], agents=sz["agents_bc"], dims=d,
                                            actions=sz["actions"], horizon=sz["horizon"], epsilon=1.0,
                                            noise="gaussian", schedule="mlogt", beta=sz["beta"])
        series[f"d = {d}"] = (ts, curve[ts - 1])
        rows += [[d, syncs, int(t), round(float(curve[t - 1]), 3), round(float(rand[t - 1]), 3)]
                 for t in ts]
        print(f"C  d={d:<4} per-agent regret {curve[-1]:9.2f}  random {rand[-1]:.2f}  syncs {syncs}")
    _write_csv(out / "fig1c_dimension.csv",
               ["dims", "sync_rounds", "t", "per_agent_regret", "random_per_agent_regret"], rows)
    _plot(out / "fig1c_dimension.png", f"(C) Dependence on d, M = {sz['agents_bc']}{_beta_note(sz)}", "T",
          "per-agent regret", series)
    return rows


def _plot(path: Path, title: str, xlabel: str, ylabel: str, series: dict, *, logx: bool = False,
          dashed=lambda k: False) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(matplotlib not installed: no {path.name})")
        return
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for label, (x, y) in series.items():
        ax.plot(x, y, "--" if dashed(label) else "-", marker="o" if logx else None, label=label)
    if logx:
        ax.set_xscale("log")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--panel", default="all", choices=["A", "B", "C", "all"])
    ap.add_argument("--out", type=Path, default=Path("runs/fig-feducb"))
    ap.add_argument("--paper", action="store_true", help="the paper's sizes (days of CPU)")
    ap.add_argument("--horizon", type=int, help="override T")
    ap.add_argument("--runs", type=int, help="override the number of runs averaged")
    ap.add_argument("--agents", type=int, nargs="+", help="override M (panel A list; B, C first)")
    ap.add_argument("--dims", type=int, nargs="+", help="override d (panel C list; A, B first)")
    ap.add_argument("--eps", type=float, nargs="+", help="override panel A's epsilons")
    ap.add_argument("--beta", type=float, default=None,
                    help="a fixed UCB radius in place of Prop. 2's (declared on the figures)")
    args = ap.parse_args(argv)
    sz = dict(PAPER if args.paper else REDUCED, beta=args.beta)
    if args.horizon:
        sz["horizon"] = args.horizon
    if args.runs:
        sz["runs"] = args.runs
    if args.agents:
        sz["agents_a"], sz["agents_bc"] = args.agents, args.agents[0]
    if args.eps:
        sz["eps_a"] = args.eps
    if args.dims:
        sz["dims_c"], sz["dims"] = args.dims, args.dims[0]
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    for name, fn in (("A", panel_a), ("B", panel_b), ("C", panel_c)):
        if args.panel in (name, "all"):
            fn(sz, args.out)
    print(f"wrote {args.out} in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
