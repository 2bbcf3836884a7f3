"""Plot Figure 8 of SAMBA from the CSVs of scripts/bench_samba.py.

    python scripts/plot_samba_figure8.py --in results/samba     # writes figure8.png there
Rows are datasets; columns (a) time vs N, (b) per-step time vs K (secure solid, standard
dotted),
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


def _lines(ax, series: dict, xlabel: str, ylabel: str, title: str) -> None:
    """Secure (solid) and standard (dotted, same colour) curves per algorithm."""
    for alg, pts in sorted(series.items()):
        pts.sort()
        line, = ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=alg)
        ax.plot([p[0] for p in pts], [p[2] for p in pts], "x:", color=line.get_color())
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    ax.legend(fontsize=7)


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
        series = defaultdict(list)  # (a) seconds vs N at the largest K
        for r in t:
            if int(r["K"]) == kmax:
                series[r["algorithm"]].append((int(r["N"]), float(r["core_s"]), float(r["plaintext_s"])))
        _lines(row[0], series, "N", "seconds (steps 2-5)", f"(a) {d}, K={kmax}")
        series = defaultdict(list)  # (b) per-step time vs K (any N: the time is linear in N)
        for r in t:
            series[r["algorithm"]].append((int(r["K"]), float(r["ms_per_step"]),
                                           float(r["plaintext_ms_per_step"])))
        _lines(row[1], series, "K", "ms per step", f"(b) {d}: per-step time vs K")
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
        s = [r for r in shares if r["dataset"] == d and int(r["K"]) == kmax]
        by_role = defaultdict(float)
        for r in s:
            by_role[r["role"]] += float(r["cpu_s"])
        if by_role:
            ax.pie(list(by_role.values()), labels=[f"{k} ({v:.1f} s)" for k, v in by_role.items()])
        ax.set(title=f"(d) {d}: CPU share by role, K={kmax}")
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
