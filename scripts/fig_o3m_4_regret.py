"""Figure 4 of Cao et al. 2023: cumulative regret of central vs partial vs VFUCB/VFTS, and the
theta-norm differences ||theta^VFL_t|| - ||theta^central_t|| and ||theta^partial_t|| - ||theta^central_t||.

VFUCB/VFTS are the real O3M protocol (every party a thread, messages through the channel);
central and partial are the plaintext references with the same seed (partial = the AP's own
block, partition[0] features). Writes fig_o3m_4.csv (mean and std over repeats per round,
thinned) and fig_o3m_4.png.

    python scripts/fig_o3m_4_regret.py             # reduced: T = 1000, 2 repeats
    python scripts/fig_o3m_4_regret.py --paper     # T = 5000, 5 repeats (d = 100, K = 10, [20]*5)
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.protocols import get_protocol  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402
from mpcbandit.protocols.o3m import plaintext_run  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "o3m-synthetic.toml"
METHODS = ("central", "partial", "vfl")


def one_run(algorithm: str, iterations: int, seed: int, arms: int) -> dict[str, dict]:
    """Regret curves and theta norms of central, partial and O3M for one seed."""
    cfg = load_config(CONFIG, [f"o3m.algorithm={algorithm}", f"o3m.iterations={iterations}",
                               f"o3m.arms={arms}", f"seed={seed}"])
    results, _ = run_protocol_inproc(cfg)
    return {"central": plaintext_run(cfg),
            "partial": plaintext_run(cfg, cfg.section.partition[0]),
            "vfl": get_protocol("o3m").summarize(cfg, results)}


def curves(algorithm: str, iterations: int, repeats: int, arms: int) -> dict[str, np.ndarray]:
    """(repeats, T) arrays: cumulative regret per method and norm differences to central."""
    out: dict[str, list] = {f"regret_{m}": [] for m in METHODS}
    out |= {"norm_diff_vfl": [], "norm_diff_partial": [], "same_arms": []}
    for r in range(repeats):
        runs = one_run(algorithm, iterations, seed=1 + r, arms=arms)
        for m in METHODS:
            out[f"regret_{m}"].append(np.cumsum(runs[m]["series"]["regret"]))
        central = np.asarray(runs["central"]["series"]["theta_norm"])
        out["norm_diff_vfl"].append(np.asarray(runs["vfl"]["series"]["theta_norm"]) - central)
        out["norm_diff_partial"].append(np.asarray(runs["partial"]["series"]["theta_norm"]) - central)
        out["same_arms"].append(np.asarray([runs["vfl"]["series"]["arms"] == runs["central"]["series"]["arms"]], float))
    return {k: np.asarray(v) for k, v in out.items()}


def plot(data: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    labels = {"linucb": ("LinUCB", "VFUCB"), "lints": ("LinTS", "VFTS")}
    for col, alg in enumerate(("linucb", "lints")):
        d = data[alg]
        central, vfl = labels[alg]
        ax = axes[2 * col]
        for m, name, style in (("central", f"central {central}", "-"),
                               ("partial", f"partial local {central}", "-"),
                               ("vfl", vfl, "--")):
            y = d[f"regret_{m}"]
            t = np.arange(1, y.shape[1] + 1)
            ax.plot(t, y.mean(0), style, label=name)
            ax.fill_between(t, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_ylabel("cumulative regret")
        ax.set_title(f"({'ac'[col]}) {vfl} vs {central}")
        ax.legend()
        ax = axes[2 * col + 1]
        for key, name in (("norm_diff_vfl", vfl), ("norm_diff_partial", "partial")):
            y = d[key]
            ax.plot(np.arange(1, y.shape[1] + 1), y.mean(0), label=name)
        ax.set_xlabel("t")
        ax.set_ylabel("||theta_t|| - ||theta_t^central||")
        ax.set_title(f"({'bd'[col]}) theta-norm difference")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", action="store_true", help="T = 5000, 5 repeats")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-figures"))
    args = ap.parse_args(argv)
    iterations = args.iterations or (5000 if args.paper else 1000)
    repeats = args.repeats or (5 if args.paper else 2)
    t0 = time.perf_counter()
    data = {alg: curves(alg, iterations, repeats, args.arms) for alg in ("linucb", "lints")}
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "fig_o3m_4.csv"
    step = max(1, iterations // 200)
    rows_t = sorted(set(range(step - 1, iterations, step)) | {iterations - 1})
    keys = [k for k in data["linucb"] if k != "same_arms"]
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algorithm", "t"] + [f"{k}_{s}" for k in keys for s in ("mean", "std")])
        for alg, d in data.items():
            for t in rows_t:
                w.writerow([alg, t + 1] + [f"{v:.12g}" for k in keys
                                           for v in (d[k][:, t].mean(), d[k][:, t].std())])
    print(f"Figure 4: d = 100, K = {args.arms}, partition [20]*5, T = {iterations}, "
          f"{repeats} repeats ({time.perf_counter() - t0:.1f} s)")
    print(f"{'algorithm':<8} {'central R(T)':>13} {'partial R(T)':>13} {'O3M R(T)':>13} "
          f"{'max|dnorm| O3M':>15} {'|dnorm| partial(T)':>19} {'same arms':>10}")
    summary = {}
    for alg, d in data.items():
        row = {m: float(d[f"regret_{m}"][:, -1].mean()) for m in METHODS}
        row |= {"max_norm_diff_vfl": float(np.abs(d["norm_diff_vfl"]).max()),
                "norm_diff_partial_T": float(np.abs(d["norm_diff_partial"][:, -1]).mean()),
                "same_arms": bool(d["same_arms"].all())}
        summary[alg] = row
        print(f"{alg:<8} {row['central']:>13.3f} {row['partial']:>13.3f} {row['vfl']:>13.3f} "
              f"{row['max_norm_diff_vfl']:>15.2e} {row['norm_diff_partial_T']:>19.4f} "
              f"{str(row['same_arms']):>10}")
    png = args.out / "fig_o3m_4.png"
    plot(data, png)
    print(f"wrote {csv_path} and {png}")
    return summary


if __name__ == "__main__":
    main()
