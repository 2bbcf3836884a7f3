"""Cao et al. (2023), O3M: Figures 4 and 6 as `mpcbandit figure o3m-4` and `o3m-6`.

The O3M curves come from the real protocol (every party a thread, every message through the
channel and its codec); central and partial are the plaintext references at the same seed, so
"lossless" is read off as O3M's arms being central's, step for step.
"""

from __future__ import annotations

import click
import numpy as np

from mpcbandit.data.criteo import ITEM_DIMS, USER_DIMS, default_path
from mpcbandit.data.vertical_synthetic import NOISE_READINGS
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    experiment_command,
    mean_std,
    shipped_config,
    sized_option,
    thinned,
)
from mpcbandit.protocols.inproc_runner import inproc_summary
from mpcbandit.protocols.o3m.protocol import environment, plaintext_run

__all__ = ["figure_4", "figure_6", "lossless_curves", "partial_curves", "criteo_ctr",
           "random_user_columns"]

#: algorithm -> (the centralised learner, its O3M version), as the paper names them
NAMES = {"linucb": ("LinUCB", "VFUCB"), "lints": ("LinTS", "VFTS")}
RATIOS = (0.2, 0.8)
PARTITIONS = 5  # random partitions per partial ratio on Criteo (App. D.3)

noise_option = click.option(
    "--noise", type=click.Choice(NOISE_READINGS), default="std",
    help="The paper's reward noise N(0, 0.05) read as a standard deviation or a variance (only "
         "the std reading gives the paper's partial > 10x central).")


def lossless_curves(algorithm: str, iterations: int, repeats: int, arms: int,
                    noise: str = "std") -> dict[str, np.ndarray]:
    """(repeats, T) arrays: cumulative regret of central, partial (the AP's block) and O3M, and
    the theta-norm differences to central; `same_arms` per repeat."""
    out: dict[str, list] = {k: [] for k in ("regret_central", "regret_partial", "regret_vfl",
                                            "norm_diff_vfl", "norm_diff_partial", "same_arms")}
    for rep in range(repeats):
        cfg = shipped_config("o3m-synthetic.toml", [
            f"o3m.algorithm={algorithm}", f"o3m.iterations={iterations}", f"o3m.arms={arms}",
            f"o3m.noise={noise!r}", f"seed={1 + rep}"])
        runs = {"central": plaintext_run(cfg), "vfl": inproc_summary(cfg),
                "partial": plaintext_run(cfg, cfg.section.partition[0])}
        for name, run in runs.items():
            out[f"regret_{name}"].append(np.cumsum(run["series"]["regret"]))
        central = np.asarray(runs["central"]["series"]["theta_norm"])
        for name in ("vfl", "partial"):
            norm = np.asarray(runs[name]["series"]["theta_norm"])
            out[f"norm_diff_{name}"].append(norm - central)
        out["same_arms"].append(runs["vfl"]["series"]["arms"] == runs["central"]["series"]["arms"])
    return {k: np.asarray(v) for k, v in out.items()}


def _sig(v: float) -> float:
    """v to 12 significant digits (differences of 1e-15 stay visible)."""
    return float(f"{v:.12g}")


def _curve(label: str, y: np.ndarray, idx: np.ndarray, **style) -> Curve:
    mean, std = mean_std(y)
    return Curve(label, idx + 1, mean[idx], std[idx] if len(y) > 1 else None, **style)


@experiment_command("o3m-4", "T = 5000, 5 repeats (d = 100, K = 10, M = 5)",
                    short_help="Fig. 4: O3M is lossless, its regret and theta against central",
                    computed_by=("O3M's curves from the secure protocol (every party a thread, "
                                 "every message through the channel and its codec); central and "
                                 "partial from float64 plaintext references at the same seed"))
@sized_option("--iterations", int, 1000, 5000, "T, bandit steps per run.")
@sized_option("--repeats", int, 2, 5, "Runs averaged per curve (seeds 1 ... repeats).")
@click.option("--arms", type=click.IntRange(min=2), default=10, help="K, arms per step.")
@noise_option
def figure_4(out: Output, paper: bool, iterations: int, repeats: int, arms: int,
             noise: str) -> None:
    """Cao et al. (2023), Figure 4: O3M is lossless.

    Cumulative regret of central LinUCB / LinTS (all features in one place), partial (the
    active party's 20 features alone) and O3M's VFUCB / VFTS (the real protocol, d = 100 split
    [20] x 5), and the differences ||theta_t|| - ||theta_t^central|| of O3M and of partial, on
    the synthetic stream of configs/o3m-synthetic.toml. Writes o3m_fig4 (.csv, .md, .png).
    """
    data = {alg: lossless_curves(alg, iterations, repeats, arms, noise) for alg in NAMES}
    idx = thinned(iterations)
    keys = [k for k in data["linucb"] if k != "same_arms"]
    stats = {alg: [mean_std(d[k]) for k in keys] for alg, d in data.items()}
    rows = [[alg, int(t) + 1, *(_sig(v[t]) for pair in stats[alg] for v in pair)]
            for alg in data for t in idx]
    out.table("o3m_fig4", ["algorithm", "t", *(f"{k}_{s}" for k in keys for s in ("mean", "std"))],
              rows, f"O3M Figure 4: d = 100, K = {arms}, T = {iterations}, {repeats} runs")
    click.echo(f"{'algorithm':<9} {'central R(T)':>13} {'partial R(T)':>13} {'O3M R(T)':>13} "
               f"{'max |dnorm| O3M':>16} {'same arms':>10}")
    panels = []
    for col, (alg, d) in enumerate(data.items()):
        central, vfl = NAMES[alg]
        worst = float(np.abs(d["norm_diff_vfl"]).max())
        same = bool(d["same_arms"].all())
        final = [d[f"regret_{m}"][:, -1].mean() for m in ("central", "partial", "vfl")]
        click.echo(f"{alg:<9} " + " ".join(f"{v:>13.3f}" for v in final)
                   + f" {worst:>16.2e} {str(same):>10}")
        panels.append(Panel(
            f"({'ac'[col]}) {vfl} against {central}", "t", "cumulative regret (mean ± std)",
            [_curve(f"central {central}", d["regret_central"], idx, color="k"),
             _curve(f"partial {central} (20 of 100 features)", d["regret_partial"], idx,
                    color="tab:red"),
             _curve(vfl, d["regret_vfl"], idx, dashed=True, color="tab:blue")], logy=True))
        panels.append(Panel(
            f"({'bd'[col]}) theta-norm difference to central", "t",
            "||theta_t|| - ||theta_t^central|| (mean)",
            [_curve(vfl, d["norm_diff_vfl"], idx, color="tab:blue"),
             _curve("partial", d["norm_diff_partial"], idx, color="tab:red")], logy=False,
            note=f"{vfl}: max |difference| {worst:.1e}; "
                 + ("the same arm as central at every step of every run" if same
                    else "ARMS DIFFER from central")))
    out.figure("o3m_fig4", panels, f"O3M (Cao et al.) Figure 4: synthetic stream, d = 100, "
               f"K = {arms}, M = 5 ([20] x 5), T = {iterations:,}, {repeats} runs, reward noise "
               f"N(0, 0.05) read as a {noise}")


def partial_curves(algorithm: str, iterations: int, repeats: int,
                   noise: str = "std") -> dict[str, np.ndarray]:
    """Cumulative regret (repeats, T) at each partial ratio (the leading columns) and with every
    feature through O3M ("1.0")."""
    out: dict[str, list] = {str(r): [] for r in RATIOS} | {"1.0": []}
    for rep in range(repeats):
        cfg = shipped_config("o3m-synthetic.toml", [
            f"o3m.algorithm={algorithm}", f"o3m.iterations={iterations}", f"seed={1 + rep}",
            f"o3m.noise={noise!r}"])
        for r in RATIOS:
            out[str(r)].append(np.cumsum(plaintext_run(cfg, round(r * cfg.section.dims))
                                         ["series"]["regret"]))
        out["1.0"].append(np.cumsum(inproc_summary(cfg)["series"]["regret"]))
    return {k: np.asarray(v) for k, v in out.items()}


def random_user_columns(rng: np.random.Generator, ratio: float) -> list[int]:
    """Columns of a random round(ratio x 13) of the Criteo user features (3 columns each)."""
    users = sorted(rng.choice(USER_DIMS, max(1, round(ratio * USER_DIMS)), replace=False))
    return [u * ITEM_DIMS + i for u in users for i in range(ITEM_DIMS)]


def criteo_ctr(iterations: int | None) -> dict[str, float] | None:
    """Replay CTR over the log's CTR: partial LinUCB at each ratio (mean and std over random
    partitions) and VFUCB; None without the Criteo file."""
    if not default_path().is_file():
        return None
    cfg = shipped_config("o3m-criteo.toml", [] if iterations is None else
                     [f"o3m.iterations={iterations}"])
    base = environment(cfg).click_rate
    rng = np.random.default_rng(cfg.seed)
    out = {}
    for r in RATIOS:
        ctrs = []
        for _ in range(PARTITIONS):
            run = plaintext_run(cfg, random_user_columns(rng, r))
            ctrs.append(run["ctr"] / base if run["ctr"] is not None else float("nan"))
        out[str(r)], out[f"std_{r}"] = float(np.mean(ctrs)), float(np.std(ctrs, ddof=1))
    secure = inproc_summary(cfg)
    out["1.0"] = secure["ctr"] / base if secure["ctr"] is not None else float("nan")
    out["matched_1.0"] = secure["matched"]
    return out


@experiment_command("o3m-6", "T = 5000, 5 repeats; Criteo: every kept row of the log found",
                    short_help="Fig. 6: what the other participants' features buy O3M",
                    computed_by=("O3M's curves and VFUCB's Criteo CTR from the secure protocol "
                                 "(every party a thread, every message through the channel and "
                                 "its codec); partial from float64 plaintext references"))
@sized_option("--iterations", int, 1000, 5000, "T of the synthetic runs.")
@sized_option("--repeats", int, 2, 5, "Synthetic runs averaged per curve (seeds 1 ... repeats).")
@click.option("--criteo-iterations", type=click.IntRange(min=1), default=None,
              show_default=False, help="Replay rounds on Criteo  [default: every kept log row]")
@noise_option
def figure_6(out: Output, paper: bool, iterations: int, repeats: int,
             criteo_iterations: int | None, noise: str) -> None:
    """Cao et al. (2023), Figure 6: what the other participants' features buy.

    (a), (b): cumulative regret on the synthetic stream with 20 % and 80 % of the features (the
    leading columns) against the full O3M protocol (VFUCB / VFTS). (c): replay CTR on the
    Criteo log (App. D.3) over the log's CTR, of partial LinUCB at 20 % and 80 % (mean ± std
    over 5 random partitions of whole user features) and of VFUCB; skipped, and said so,
    without the Criteo file (MPCBANDIT_DATA). Writes o3m_fig6 (.csv, .md, .png).
    """
    data = {alg: partial_curves(alg, iterations, repeats, noise) for alg in NAMES}
    ctr = criteo_ctr(criteo_iterations)
    idx = thinned(iterations)
    rows = [["synthetic_regret", alg, key, int(t) + 1, _sig(mean[t]), _sig(std[t])]
            for alg, d in data.items() for key, (mean, std) in
            ((key, mean_std(y)) for key, y in d.items()) for t in idx]
    if ctr is not None:
        rows += [["criteo_relative_ctr", "linucb", key, "", round(ctr[key], 6),
                  round(ctr.get(f"std_{key}", float("nan")), 6)] for key in ("0.2", "0.8", "1.0")]
    out.table("o3m_fig6", ["panel", "algorithm", "partial_ratio", "t", "mean", "std"], rows,
              f"O3M Figure 6: synthetic T = {iterations}, {repeats} runs; Criteo relative CTR")
    click.echo(f"{'algorithm':<9} {'R(T) ratio 0.2':>15} {'R(T) ratio 0.8':>15} {'R(T) O3M':>15}")
    panels = []
    for col, (alg, d) in enumerate(data.items()):
        vfl = NAMES[alg][1]
        click.echo(f"{alg:<9} " + " ".join(f"{d[k][:, -1].mean():>15.3f}"
                                           for k in ("0.2", "0.8", "1.0")))
        panels.append(Panel(f"({'ab'[col]}) {vfl}, synthetic", "t",
                            "cumulative regret (mean ± std)",
                            [_curve("partial ratio 0.2", d["0.2"], idx, color="tab:red"),
                             _curve("partial ratio 0.8", d["0.8"], idx, color="tab:orange"),
                             _curve(f"{vfl} (all features)", d["1.0"], idx, color="tab:blue")],
                            logy=True))
    title = (f"O3M (Cao et al.) Figure 6: synthetic d = 100, K = 10, T = {iterations:,}, "
             f"{repeats} runs, noise N(0, 0.05) read as a {noise}")
    if ctr is None:
        click.echo("Criteo: data absent (MPCBANDIT_DATA), panel (c) skipped")
        title += "; Criteo panel skipped: data absent"
    else:
        click.echo(f"Criteo relative CTR ({ctr['matched_1.0']} matched replay rounds for VFUCB): "
                   f"ratio 0.2 {ctr['0.2']:.3f} ± {ctr['std_0.2']:.3f}, ratio 0.8 {ctr['0.8']:.3f}"
                   f" ± {ctr['std_0.8']:.3f}, VFUCB {ctr['1.0']:.3f}")
        panels.append(Panel(
            f"(c) Criteo replay, {ctr['matched_1.0']} matched rounds (VFUCB)", "partial ratio",
            "CTR / the log's CTR",
            [Curve(f"partial LinUCB (± std over {PARTITIONS} random partitions)", list(RATIOS),
                   [ctr[str(r)] for r in RATIOS], [ctr[f"std_{r}"] for r in RATIOS],
                   color="tab:red"),
             Curve("VFUCB (all features)", [1.0], [ctr["1.0"]], color="tab:blue"),
             Curve("the log's CTR", [RATIOS[0], 1.0], [1.0, 1.0], dashed=True, color="0.6")],
            logx=False, logy=False,
            note="" if ctr["matched_1.0"] >= 1000 else
            f"{ctr['matched_1.0']} matched rounds: too few to rank the CTRs (the full log is)"))
    out.figure("o3m_fig6", panels, title)
