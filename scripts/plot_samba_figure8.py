"""Plot Figure 8 of SAMBA from the CSVs of scripts/bench_samba.py.

    python scripts/plot_samba_figure8.py --in results/samba     # writes figure8.png there
Rows are datasets; columns (a) time vs N, (b) time vs K (secure solid, standard dotted),
(c) cumulative reward vs N, (d) share of CPU time per role at the largest K.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path


def _read(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def plot(src: Path, dest: Path) -> Path:
    """Draw the four panels per dataset into dest (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    times, rewards, shares = (_read(src / f"{n}.csv") for n in ("times", "rewards", "shares"))
    datasets = sorted({r["dataset"] for r in times + rewards})
    fig, axes = plt.subplots(len(datasets), 4, figsize=(18, 4 * len(datasets)), squeeze=False)
    for row, d in zip(axes, datasets):
        t = [r for r in times if r["dataset"] == d]
        kmax = max((int(r["K"]) for r in t), default=0)
        nmax = max((int(r["N"]) for r in t), default=0)
        for col, (key, fixed_key, fixed, label) in enumerate(
                [("N", "K", kmax, f"K={kmax}"), ("K", "N", nmax, f"N={nmax}")]):
            series = defaultdict(list)
            for r in t:
                if int(r[fixed_key]) == fixed:
                    series[r["algorithm"]].append((int(r[key]), float(r["core_s"]),
                                                   float(r["plaintext_s"])))
            ax = row[col]
            for alg, pts in sorted(series.items()):
                pts.sort()
                line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=alg)
                ax.plot([p[0] for p in pts], [p[2] for p in pts], ":", color=line.get_color())
            ax.set(xlabel=key, ylabel="seconds (core steps)", title=f"({'ab'[col]}) {d}, {label}")
            ax.legend(fontsize=7)
        ax = row[2]
        curves = defaultdict(list)
        for r in rewards:
            if r["dataset"] == d:
                curves[r["algorithm"]].append((int(r["N"]), int(r["cumulative_reward"])))
        for alg, pts in sorted(curves.items()):
            pts.sort()
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=alg)
        ax.set(xlabel="N", ylabel="cumulative reward", title=f"(c) {d}")
        ax.legend(fontsize=7)
        ax = row[3]
        s = [r for r in shares if r["dataset"] == d and int(r["K"]) == kmax and int(r["N"]) == nmax]
        by_role = defaultdict(float)
        for r in s:
            by_role[r["role"]] += float(r["cpu_s"])
        if by_role:
            ax.pie(list(by_role.values()), labels=[f"{k} ({v:.1f} s)" for k, v in by_role.items()])
        ax.set(title=f"(d) {d}: CPU share, K={kmax}, N={nmax} (all algorithms)")
    fig.tight_layout()
    fig.savefig(dest, dpi=90)
    plt.close(fig)
    return dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--in", dest="src", type=Path, default=Path("results/samba"))
    ap.add_argument("--out", type=Path, default=None, help="PNG path (default: <in>/figure8.png)")
    args = ap.parse_args(argv)
    print(plot(args.src, args.out or args.src / "figure8.png"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
