"""Figure 6 of Cao et al. 2023: what more participants' features buy.

(a)/(b) cumulative regret on the synthetic stream with 20 % and 80 % of the features (partial
ratio = features used / d, the leading columns) against the full O3M protocol (VFUCB/VFTS);
(c) relative CTR on the Criteo log (replay, App. D.3) of partial LinUCB at 20 % / 80 % against
VFUCB, relative to the log's overall CTR; each partial point is the mean over 5 random
partitions (as in D.3: a random subset of the 13 user features, each with its 3 columns). The full-feature runs are the real O3M protocol
(threads, real messages). Writes fig_o3m_6.csv and fig_o3m_6.png.

    python scripts/fig_o3m_6_partial.py            # reduced: T = 1000, 2 repeats
    python scripts/fig_o3m_6_partial.py --paper    # T = 5000, 5 repeats
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
from mpcbandit.data.criteo import ITEM_DIMS, USER_DIMS, default_path  # noqa: E402
from mpcbandit.protocols import get_protocol  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402
from mpcbandit.protocols.o3m import environment, plaintext_run  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RATIOS = (0.2, 0.8)


def _secure(cfg) -> dict:
    return get_protocol("o3m").summarize(cfg, run_protocol_inproc(cfg)[0])


def synthetic(algorithm: str, iterations: int, repeats: int, noise: str = "std") -> dict[str, np.ndarray]:
    """Cumulative regret (repeats, T) at each partial ratio and with all features (O3M)."""
    out: dict[str, list] = {str(r): [] for r in RATIOS} | {"1.0": []}
    for rep in range(repeats):
        cfg = load_config(ROOT / "configs" / "o3m-synthetic.toml",
                          [f"o3m.algorithm={algorithm}", f"o3m.iterations={iterations}", f"seed={1 + rep}",
                           f"o3m.noise={noise!r}"])
        for r in RATIOS:
            run = plaintext_run(cfg, round(r * cfg.section.dims))
            out[str(r)].append(np.cumsum(run["series"]["regret"]))
        out["1.0"].append(np.cumsum(_secure(cfg)["series"]["regret"]))
    return {k: np.asarray(v) for k, v in out.items()}


PARTITIONS = 5  # random partitions per partial ratio on Criteo (App. D.3)


def random_user_columns(rng: np.random.Generator, ratio: float) -> list[int]:
    """Columns of a random round(ratio x 13) of the Criteo user features (3 columns each)."""
    users = sorted(rng.choice(USER_DIMS, max(1, round(ratio * USER_DIMS)), replace=False))
    return [u * ITEM_DIMS + i for u in users for i in range(ITEM_DIMS)]


def criteo_ctr(iterations: int | None) -> dict[str, float] | None:
    """Replay CTR relative to the log's CTR: partial LinUCB at each ratio (mean and std over
    random partitions) and VFUCB."""
    if not default_path().is_file():
        return None
    sets = [] if iterations is None else [f"o3m.iterations={iterations}"]
    cfg = load_config(ROOT / "configs" / "o3m-criteo.toml", sets)
    base = environment(cfg).click_rate
    rng = np.random.default_rng(cfg.seed)
    out = {}
    for r in RATIOS:
        ctrs = []
        for _ in range(PARTITIONS):
            run = plaintext_run(cfg, random_user_columns(rng, r))
            ctrs.append(run["ctr"] / base if run["ctr"] is not None else float("nan"))
        out[str(r)], out[f"std_{r}"] = float(np.mean(ctrs)), float(np.std(ctrs, ddof=1))
    secure = _secure(cfg)
    out["1.0"] = secure["ctr"] / base if secure["ctr"] is not None else float("nan")
    out["matched_1.0"] = secure["matched"]
    return out


def plot(data: dict, ctr: dict | None, path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4))
    for ax, alg, name in ((axes[0], "linucb", "VFUCB"), (axes[1], "lints", "VFTS")):
        for key, label in (("0.2", "partial ratio 0.2"), ("0.8", "partial ratio 0.8"), ("1.0", name)):
            y = data[alg][key]
            t = np.arange(1, y.shape[1] + 1)
            ax.plot(t, y.mean(0), label=label)
            ax.fill_between(t, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)
        ax.set_yscale("log")
        ax.set_xlabel("t")
        ax.set_ylabel("cumulative regret")
        ax.set_title(f"({'ab'[alg == 'lints']}) {name}, synthetic")
        ax.legend()
    ax = axes[2]
    if ctr is not None:
        ax.bar(["0.2", "0.8", "VFUCB (1.0)"], [ctr["0.2"], ctr["0.8"], ctr["1.0"]],
               yerr=[ctr["std_0.2"], ctr["std_0.8"], 0], capsize=4)
        ax.set_ylabel("CTR / log CTR")
        ax.set_title(f"(c) Criteo relative CTR, {ctr['matched_1.0']} matched rounds (VFUCB)\n"
                     f"partial: mean +- std over {PARTITIONS} random partitions", fontsize=9)
    else:
        ax.set_title("(c) Criteo relative CTR (data absent)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--paper", action="store_true", help="T = 5000, 5 repeats")
    ap.add_argument("--iterations", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--criteo-iterations", type=int, default=None, help="default: every kept log row")
    ap.add_argument("--noise", choices=("std", "variance"), default="std",
                    help="the paper's reward noise N(0, 0.05) read as a std (default) or a variance")
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-figures"))
    args = ap.parse_args(argv)
    iterations = args.iterations or (5000 if args.paper else 1000)
    repeats = args.repeats or (5 if args.paper else 2)
    t0 = time.perf_counter()
    data = {alg: synthetic(alg, iterations, repeats, args.noise) for alg in ("linucb", "lints")}
    ctr = criteo_ctr(args.criteo_iterations)
    args.out.mkdir(parents=True, exist_ok=True)
    csv_path = args.out / "fig_o3m_6.csv"
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["panel", "algorithm", "partial_ratio", "t", "mean", "std"])
        step = max(1, iterations // 200)
        for alg, d in data.items():
            for key, y in d.items():
                for t in sorted(set(range(step - 1, iterations, step)) | {iterations - 1}):
                    w.writerow(["synthetic_regret", alg, key, t + 1, f"{y[:, t].mean():.12g}",
                                f"{y[:, t].std():.12g}"])
        if ctr is not None:
            for key in ("0.2", "0.8", "1.0"):
                std = f"{ctr['std_' + key]:.6g}" if "std_" + key in ctr else ""
                w.writerow(["criteo_relative_ctr", "linucb", key, "", f"{ctr[key]:.6g}", std])
    print(f"Figure 6: synthetic d = 100, K = 10, T = {iterations}, {repeats} repeats, noise "
          f"N(0, 0.05) read as a {args.noise} "
          f"({time.perf_counter() - t0:.1f} s)")
    print(f"{'algorithm':<8} {'R(T) ratio 0.2':>15} {'R(T) ratio 0.8':>15} {'R(T) O3M full':>15}")
    summary = {}
    for alg, d in data.items():
        summary[alg] = {k: float(v[:, -1].mean()) for k, v in d.items()}
        s = summary[alg]
        print(f"{alg:<8} {s['0.2']:>15.3f} {s['0.8']:>15.3f} {s['1.0']:>15.3f}")
    if ctr is None:
        print("Criteo: data absent, panel (c) skipped")
    else:
        print(f"Criteo relative CTR (replay, {ctr['matched_1.0']} matched rounds for VFUCB): "
              f"ratio 0.2 {ctr['0.2']:.3f} +- {ctr['std_0.2']:.3f}, ratio 0.8 {ctr['0.8']:.3f} +- "
              f"{ctr['std_0.8']:.3f} ({PARTITIONS} random partitions), VFUCB {ctr['1.0']:.3f}")
        summary["criteo"] = ctr
    png = args.out / "fig_o3m_6.png"
    plot(data, ctr, png)
    print(f"wrote {csv_path} and {png}")
    return summary


if __name__ == "__main__":
    main()
