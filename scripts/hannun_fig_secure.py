"""Hannun et al. Figs. 3, 4, 7 and 8 from secure runs (real processes on loopback):
runtime per iteration vs arms (one line per party count), vs parties (one line per arm
count), and average reward vs fixed-point precision bits and vs Newton-Raphson iterations.

    python scripts/hannun_fig_secure.py fig3|fig4|fig7|fig8 [--full] [--out DIR]
Writes DIR/hannun_figN.csv and .png. Reduced sizes by default; --full is paper size.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.data.mnist import mnist_present  # noqa: E402
from mpcbandit.data.tasks import mnist_dir  # noqa: E402
from mpcbandit.experiments.common import Curve, Output, Panel  # noqa: E402
from mpcbandit.launch import run_local  # noqa: E402

CONFIG = ROOT / "configs" / "hannun-synthetic.toml"


def secure_run(out: Path, **section) -> dict:
    """Summary of one secure run with [hannun] keys overridden."""
    sets = [f"hannun.{k}={v!r}" if isinstance(v, str) else f"hannun.{k}={v}" for k, v in section.items()]
    sets = [s.replace("'", '"') for s in sets]
    tag = "-".join(f"{k}{v}" for k, v in section.items())
    return run_local(load_config(CONFIG, sets), out / "runs" / tag, echo=lambda *_: None)


def runtime_grid(args, arms_list, parties_list) -> list[list]:
    rows = []
    for n in parties_list:
        for a in arms_list:
            s = secure_run(args.out, arms=a, feature_holders=n, iterations=args.steps)
            rows.append([a, n, s["seconds_per_step"], s["critical_rounds_per_step"],
                         s["online_bytes_per_step_feature_holder"],
                         max(v for k, v in s["bytes_per_step_by_party"].items()
                             if k.startswith("feature_holder")), round(os.getloadavg()[0], 2)])
    return rows


HEADER = ["arms", "parties", "seconds_per_iteration", "rounds_per_iteration",
          "online_bytes_per_iteration_feature_holder", "all_bytes_per_iteration_feature_holder",
          "load_1min"]


def fig3(args) -> None:
    arms = args.arms or ((10, 20, 40, 60, 80, 100) if args.full else (5, 10, 20))
    parties = args.parties or ((2, 3, 4) if args.full else (2,))
    rows = runtime_grid(args, arms, parties)
    out = Output(args.out)
    out.table("hannun_fig3", HEADER, rows)
    series = {f"|P|={n}": (np.array([r[0] for r in rows if r[1] == n]),
                           np.array([r[2] for r in rows if r[1] == n])) for n in parties}
    out.figure("hannun_fig3", [Panel("", "arms |A|", "seconds per iteration", [Curve(k, x, y) for k, (x, y) in series.items()])], "Fig. 3")


def fig4(args) -> None:
    parties = args.parties or ((2, 3, 4, 5, 6) if args.full else (2, 3))
    arms = args.arms or ((10, 50, 100) if args.full else (5, 10))
    rows = runtime_grid(args, arms, parties)
    out = Output(args.out)
    out.table("hannun_fig4", HEADER, rows)
    series = {f"|A|={a}": (np.array([r[1] for r in rows if r[0] == a]),
                           np.array([r[2] for r in rows if r[0] == a])) for a in arms}
    out.figure("hannun_fig4", [Panel("", "parties |P|", "seconds per iteration", [Curve(k, x, y) for k, (x, y) in series.items()])], "Fig. 4")


def _reward_sweep(args, key: str, values, name: str, xlabel: str, variants: dict[str, dict]) -> None:
    """Average reward and agreement with the float64 run per value of `key`, one line per variant."""
    data = args.data or ("mnist" if mnist_present(mnist_dir()) else "synthetic")
    rows, series = [], {}
    for label, extra in variants.items():
        for v in values:
            # one exploration stream for every point: rewards differ only by what `key` changes
            s = secure_run(args.out, data=data, iterations=args.steps, exploration="seeded",
                           **extra, **{key: v})
            rows.append([label, v, s["average_reward"], s.get("agreement_with_plaintext"),
                         s["plaintext_cumulative_reward"] / args.steps, s["critical_rounds_per_step"],
                         round(os.getloadavg()[0], 2)])
            print(f"{name} {label:<24} {key}={v:<3} reward {s['average_reward']:.4f}  agreement "
                  f"{s.get('agreement_with_plaintext')}", flush=True)
        series[label] = (np.array([r[1] for r in rows if r[0] == label]),
                         np.array([r[2] for r in rows if r[0] == label]))
    out = Output(args.out)
    out.table(f"hannun_{name}", ["variant", key, "average_reward", "agreement",
                                 "plaintext_average_reward", "rounds_per_iteration", "load_1min"], rows)
    out.figure(f"hannun_{name}", [Panel("", xlabel, "average reward", [Curve(k, x, y) for k, (x, y) in series.items()])],
               f"{name.replace('fig', 'Fig. ')} ({data}, T={args.steps})")


TRUNCATIONS = {"local": "local truncation (wraps)", "exact": "exact truncation (no wraps)"}


def fig7(args) -> None:
    bits = args.values or (tuple(range(14, 27)) if args.full else (14, 18, 20, 22, 24, 26))
    _reward_sweep(args, "precision_bits", bits, "fig7", "fixed-point precision bits L",
                  {TRUNCATIONS[t]: {"trunc": t} for t in args.trunc})


def fig8(args) -> None:
    its = args.values or (tuple(range(1, 11)) if args.full else (1, 2, 3, 5, 7))
    _reward_sweep(args, "newton_iterations", its, "fig8", "Newton-Raphson iterations",
                  {f"{i} start": {"reciprocal_init": i} for i in args.reciprocal_init})


FIGURES = {"fig3": fig3, "fig4": fig4, "fig7": fig7, "fig8": fig8}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("figure", choices=sorted(FIGURES))
    p.add_argument("--full", action="store_true")
    p.add_argument("--steps", type=int, default=None, help="T per run (default 200, --full 5000)")
    p.add_argument("--data", choices=("mnist", "synthetic"), default=None)
    p.add_argument("--arms", type=int, nargs="+", help="figs 3-4: arm counts (override)")
    p.add_argument("--parties", type=int, nargs="+", help="figs 3-4: feature-holder counts (override)")
    p.add_argument("--values", type=int, nargs="+", help="figs 7-8: precision bits / Newton steps")
    p.add_argument("--trunc", nargs="+", default=["local", "exact"], choices=sorted(TRUNCATIONS),
                   help="fig 7: one line per truncation (default: local and exact)")
    p.add_argument("--reciprocal-init", nargs="+", default=["paper", "linear"], choices=["paper", "linear"],
                   help="fig 8: one line per Newton start (default: the paper's and ours)")
    p.add_argument("--out", type=Path, default=Path("runs/figures"))
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = 5_000 if args.full else 200
    FIGURES[args.figure](args)


if __name__ == "__main__":
    main()
