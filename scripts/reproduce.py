"""Regenerate every table and figure of the five papers, the paper's numbers beside ours.

Runs each row's command (one process per row, one row at a time: several of them time things),
keeps its CSVs, PNGs and log under OUT/ROW/, and writes OUT/reproduction.md: one section per
paper, one row per table or figure with the paper's setting and numbers, our setting and
numbers read back from the row's CSVs, the time the row took and the command that regenerated
it. A row that fails is reported with its exit code and log; the rows after it still run and
the rows before it keep their outputs.

    python scripts/reproduce.py --quick                   # every row, reduced sizes (< 30 min, 2 cores)
    python scripts/reproduce.py --paper                   # the papers' sizes where this machine can
    python scripts/reproduce.py --quick --only feducb-1a hannun-7
    python scripts/reproduce.py --report                  # rebuild the page from OUT only
    python scripts/reproduce.py --list
    python scripts/reproduce.py --quick --publish         # and write docs/reproduction.md

A row's size (quick or paper) is part of its output: a page may mix rows of both, and says
which each is. --publish copies each row's PNGs and CSVs to docs/reproduction/ROW/.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mpcbandit.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@dataclass(frozen=True)
class Row:
    """One table or figure of a paper: how to regenerate it and how to read our numbers back."""

    key: str
    paper: str
    name: str
    paper_setting: str
    paper_result: str | Callable[[list[dict]], str]  # a reader when the script records the paper's numbers
    script: str  # the command, "mpcbandit figure NAME" or "mpcbandit bench NAME"
    output: str  # the file (CSV, or a JSON list) our numbers are read from
    quick: tuple[str, ...]
    full: tuple[str, ...]
    quick_size: str
    full_size: str
    ours: Callable[[list[dict]], str]
    images: tuple[str, ...] = ()
    note: str = ""


def read_rows(path: Path) -> list[dict]:
    """The records of a row's output, a CSV or a JSON list, as dicts ([] when it is missing)."""
    if not path.exists():
        return []
    if path.suffix == ".json":
        return json.loads(path.read_text())
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def row_numbers(row: "Row", folder: Path) -> tuple[str, str]:
    """The paper's numbers and ours for a row, its output in `folder` read once (ours '' without one)."""
    rows = read_rows(folder / row.output)
    paper = row.paper_result if isinstance(row.paper_result, str) else (row.paper_result(rows) if rows else "")
    return paper, row.ours(rows) if rows else ""


def num(v: str | float | None, digits: int = 3) -> str:
    """A number with `digits` significant figures and thousands separators; '-' for missing."""
    if v in (None, ""):
        return "-"
    x = float(v)
    if abs(x) >= 10 ** (digits - 1):
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def spread(std: str | float | None, fmt: str = ".3f") -> str:
    """' ± std' for a finite, non-zero standard deviation; '' where there is none (one run)."""
    if std in (None, ""):
        return ""
    x = float(std)
    return f" ± {x:{fmt}}" if math.isfinite(x) and x else ""


def last_per(rows: list[dict], keys: tuple[str, ...], t: str = "t") -> dict[tuple, dict]:
    """For each combination of `keys`, the row with the largest `t`."""
    out: dict[tuple, dict] = {}
    for r in rows:
        k = tuple(r[c] for c in keys)
        if k not in out or float(r[t]) > float(out[k][t]):
            out[k] = r
    return out


# -- our numbers, read back from each command's CSVs --------------------------------------

def ours_jdp_experiment(rows: list[dict]) -> str:
    final = last_per(rows, ("gap", "noise"))
    names = {"random": "random", "none": "non-private", "gaussian": "Gaussian", "wishart": "Wishart",
             "shifted-wishart": "shifted Wishart"}
    parts = []
    for gap in sorted({g for g, _ in final}, key=float):
        n = int(float(final[(gap, "random")]["t"]))
        cells = [f"{names[k]} {num(final[(gap, k)]['mean_regret'])}"
                 + ("" if k == "random" else f" ± {num(final[(gap, k)]['std_regret'], 2)}")
                 for k in names if (gap, k) in final]
        parts.append(f"gap {gap}, regret after n = {n:,}: " + ", ".join(cells))
    return "; ".join(parts)


def ours_jdp_eps(rows: list[dict]) -> str:
    head = (f"non-private {num(rows[0]['non_private'])}, random {num(rows[0]['random'])}; "
            "ε: Gaussian / Wishart / shifted Wishart (ρ_max/ρ_min of W) — ")
    return head + "; ".join(
        f"{num(r['epsilon'])}: {num(r['gaussian'])} / {num(r['wishart'])} / {num(r['shifted_wishart'])}"
        f" ({num(r['spread_wishart'])})" for r in rows)


def ours_o3m_4(rows: list[dict]) -> str:
    final = last_per(rows, ("algorithm",))
    parts = []
    for alg, r in sorted(final.items()):
        worst = max(abs(float(x["norm_diff_vfl_mean"])) for x in rows if x["algorithm"] == alg[0])
        parts.append(f"{alg[0]}: regret after T = {int(float(r['t'])):,} central {num(r['regret_central_mean'])}, "
                     f"O3M {num(r['regret_vfl_mean'])}, partial {num(r['regret_partial_mean'])} "
                     f"({float(r['regret_partial_mean']) / max(float(r['regret_central_mean']), 1e-12):.1f}×); "
                     f"max |‖θ_O3M‖ − ‖θ_central‖| {worst:.1e}")
    return "; ".join(parts)


def ours_o3m_5(rows: list[dict]) -> str:
    measured = [r for r in rows if r["measured_ratio"] not in ("", "None")]
    if not measured:
        return ""
    parts = []
    for alg in ("linucb", "lints"):
        sel = [r for r in measured if r["algorithm"] == alg]
        if sel:
            lo = min(sel, key=lambda r: float(r["measured_ratio"]))
            hi = max(sel, key=lambda r: float(r["measured_ratio"]))
            counts = [float(r["analytic_ratio"]) for r in rows
                      if r["algorithm"] == alg and r["analytic_ratio"] not in ("", "None")]
            counted = f"counted {min(counts):.2f}–{max(counts):.2f}×; " if counts else ""
            parts.append(f"{'VFUCB/LinUCB' if alg == 'linucb' else 'VFTS/LinTS'} {counted}measured "
                         f"{float(lo['measured_ratio']):.2f}× (K = {lo['K']}, d = {lo['d']}) to "
                         f"{float(hi['measured_ratio']):.2f}× (K = {hi['K']}, d = {hi['d']})")
    big = [r for r in rows if r["algorithm"] == "linucb" and r["comm_gb_measured"] not in ("", "None")]
    if big:
        r = max(big, key=lambda r: (int(r["K"]), int(r["d"])))
        parts.append(f"AP traffic per step at K = {r['K']}, d = {r['d']}: measured "
                     f"{1e3 * float(r['comm_gb_measured']) / 5000:.1f} MB, the paper's count "
                     f"{1e3 * float(r['comm_gb_paper']) / 5000:.1f} MB")
    return "; ".join(parts)


def ours_o3m_6(rows: list[dict]) -> str:
    final = last_per(rows, ("panel", "algorithm", "partial_ratio"))
    parts = []
    for alg in ("linucb", "lints"):
        cells = {k[2]: r for k, r in final.items() if k[:2] == ("synthetic_regret", alg)}
        vfl = [r for p, r in cells.items() if float(p) >= 1.0]
        part = sorted((float(p), r) for p, r in cells.items() if float(p) < 1.0)
        if vfl and part:
            v = float(vfl[0]["mean"])
            parts.append(f"{alg}: " + ", ".join(f"{int(p * 100)} % {num(r['mean'])}" for p, r in part)
                         + f", O3M {num(v)} ({float(part[0][1]['mean']) / v:.0f}×)")
    ctr = [r for k, r in final.items() if k[0] == "criteo_relative_ctr"]
    if ctr:
        parts.append("Criteo relative CTR: " + ", ".join(
            f"{'O3M' if float(r['partial_ratio']) >= 1 else str(int(float(r['partial_ratio']) * 100)) + ' %'} "
            f"{float(r['mean']):.2f}" + spread(r["std"], ".2f")
            for r in sorted(ctr, key=lambda r: float(r["partial_ratio"]))))
    return "; ".join(parts)


def ours_table_c3(rows: list[dict]) -> str:
    cols = (("o3m_s", "O3M"), ("o3m_per_participant_s", "O3M per participant"), ("dp_s", "DP"),
            ("mpc_s", "MPC"), ("he_s", "HE"))
    parts = []
    for r in rows:
        parts.append(f"{r['setting']}: " + ", ".join(f"{name} {num(r[c], 2)} s" for c, name in cols if r.get(c)))
    if len(rows) == 2:
        small, large = rows
        parts.append("growth " + ", ".join(
            f"{name} {float(large[c]) / float(small[c]):,.0f}×" for c, name in cols
            if small.get(c) and large.get(c)))
    return "; ".join(parts)


def paper_table_c3(rows: list[dict]) -> str:
    cols = (("paper_o3m_s", "O3M"), ("paper_dp_s", "DP"), ("paper_mpc_s", "MPC"), ("paper_he_s", "HE"))
    parts = [f"{r['setting']}: " + ", ".join(f"{n} {num(r[c], 3)} s" for c, n in cols if r.get(c)) for r in rows]
    return "; ".join(parts)


def ours_feducb_a(rows: list[dict]) -> str:
    by_m: dict[str, list[dict]] = {}
    for r in rows:
        by_m.setdefault(r["agents"], []).append(r)
    parts = [f"M = {m}: " + ", ".join(f"ε {num(r['epsilon'])} → {num(r['per_agent_regret'])}" for r in rs)
             + f" (random {num(rs[0]['random_per_agent_regret'])})" for m, rs in by_m.items()]
    return f"per-agent regret after T = {int(rows[0]['horizon']):,}, mean of {rows[0]['runs']} run(s): " + "; ".join(parts)


def _series(rows: list[dict], **match: str) -> list[dict]:
    """One curve's rows (those matching every column given), in order of t."""
    return sorted((r for r in rows if all(r[k] == v for k, v in match.items())),
                  key=lambda r: int(r["t"]))


def learned_by(rows: list[dict], **match: str) -> int:
    """The first checkpoint t by which a regret curve holds 90 % of its final regret."""
    curve = _series(rows, **match)
    final = float(curve[-1]["per_agent_regret"])
    return next(int(r["t"]) for r in curve if float(r["per_agent_regret"]) >= 0.9 * final)


def _private_terms(rows: list[dict], curves: dict[str, dict[str, str]]) -> str:
    """For each private curve (name: its columns), where it stops learning, its rho_min, and a
    fixed beta's largest bonus."""
    last = {name: _series(rows, **match)[-1] for name, match in curves.items()}
    if not all(r.get("rho_min") for r in last.values()):  # tables written before these columns
        return ""
    bonus = [float(r["ucb_bonus_bound"]) for r in last.values() if r.get("ucb_bonus_bound")]
    return ("; private: 90 % of the regret by t = "
            + ", ".join(f"{learned_by(rows, **match)} ({name})" for name, match in curves.items())
            + "; ρ_min " + ", ".join(f"{num(r['rho_min'])} ({name})" for name, r in last.items())
            + (f"; UCB bonus ≤ {max(bonus):.2g} (gaps ≥ 0.1)" if bonus else ""))


def ours_feducb_b(rows: list[dict]) -> str:
    final = last_per(rows, ("schedule", "noise"))
    names = {"m1.5": "O(M^1.5)", "mlogt": "O(M log T)", "mt": "O(MT)"}
    any_row = next(iter(final.values()))
    shown = [s for s in names if (s, "gaussian") in final and (s, "none") in final]
    return (f"per-agent regret after T = {int(any_row['t']):,}, private (ε = 1) / non-private: "
            + "; ".join(f"n = {names[s]} ({final[(s, 'gaussian')]['sync_rounds']} syncs) "
                        f"{num(final[(s, 'gaussian')]['per_agent_regret'])} / {num(final[(s, 'none')]['per_agent_regret'])}"
                        for s in shown)
            + f"; random {num(any_row['random_per_agent_regret'])}"
            + _private_terms(rows, {names[s]: {"schedule": s, "noise": "gaussian"} for s in shown}))


def ours_feducb_c(rows: list[dict]) -> str:
    final = last_per(rows, ("dims",))
    keys = sorted(final, key=lambda k: int(k[0]))
    return (f"per-agent regret after T = {int(next(iter(final.values()))['t']):,} (random): "
            + ", ".join(f"d = {k[0]} {num(final[k]['per_agent_regret'])} "
                        f"({num(final[k]['random_per_agent_regret'])})" for k in keys)
            + _private_terms(rows, {f"d = {k[0]}": {"dims": k[0]} for k in keys}))


def ours_samba_rewards(rows: list[dict]) -> str:
    n = max(int(r["N"]) for r in rows)
    final = [r for r in rows if int(r["N"]) == n]
    parts = []
    for ds in sorted({r["dataset"] for r in final}):
        parts.append(f"{ds}: " + ", ".join(f"{r['algorithm']} {int(float(r['cumulative_reward'])):,}"
                                           for r in final if r["dataset"] == ds))
    return f"cumulative reward at N = {n:,}, K = {final[0]['K']} (secure = plaintext, tested): " + "; ".join(parts)


def ours_samba_times(rows: list[dict]) -> str:
    parts = []
    for r in rows:
        one = (f", one process {float(r['one_process_ms_per_step']):.2f} ms → 10⁵ steps "
               f"{num(r['one_process_1e5_s'])} s" if r.get("one_process_ms_per_step") else "")
        parts.append(f"{r['dataset']} {r['algorithm']} K = {r['K']} (N = {int(r['N']):,}): processes "
                     f"{float(r['ms_per_step']):.2f} ms/step (relay floor {float(r['relay_ms_per_step']):.2f}, "
                     f"{float(r['vs_relay']):.1f}×) → 10⁵ steps {num(r['est_1e5_s'])} s{one}")
    return "; ".join(parts)


def ours_hannun_1(rows: list[dict]) -> str:
    final = last_per(rows, ("epsilon",), "iteration")
    t = int(next(iter(final.values()))["iteration"])
    return f"average reward after {t:,} steps: " + ", ".join(
        f"ε {k[0]} {float(r['average_reward']):.3f}" + spread(r["std"])
        for k, r in final.items())


def _eta_sweep(rows: list[dict], by: str, label: str) -> str:
    def reward(r: dict) -> str:
        return f"{float(r['average_reward']):.3f}{spread(r.get('std'))}"

    parts = []
    for v in sorted({r[by] for r in rows}, key=float):
        sel = [r for r in rows if r[by] == v]
        best = max(sel, key=lambda r: float(r["average_reward"]))
        if best["eta"] == "inf":  # no exploration beats the greedy policy: by how much?
            text = f"{label} = {v}: best η = ∞ ({reward(best)})"
            finite = [r for r in sel if r["eta"] != "inf"]
            if finite:
                runner = max(finite, key=lambda r: float(r["average_reward"]))
                gap = float(best["average_reward"]) - float(runner["average_reward"])
                std = best.get("std")
                within = std not in (None, "") and gap <= float(std)
                close = "within one std" if within else "below it"
                text += f", next η {float(runner['eta']):.1f} ({reward(runner)}), {close}"
            parts.append(text)
            continue
        greedy = [r for r in sel if r["eta"] == "inf"]
        parts.append(f"{label} = {v}: best η {float(best['eta']):.1f} ({reward(best)})"
                     + (f", η = ∞ {reward(greedy[0])}" if greedy else ""))
    return "; ".join(parts)


def ours_hannun_2(rows: list[dict]) -> str:
    return _eta_sweep(rows, "T", "T")


def ours_hannun_5(rows: list[dict]) -> str:
    return _eta_sweep(rows, "arms", "|A|")


def ours_hannun_6(rows: list[dict]) -> str:
    first = min(int(r["checkpoint"]) for r in rows)
    last = max(int(r["checkpoint"]) for r in rows)
    pick = lambda c: ", ".join(f"ε {r['epsilon']} {100 * float(r['advantage']):.2f} %"  # noqa: E731
                               for r in rows if int(r["checkpoint"]) == c)
    return f"advantage after {first:,} examples: {pick(first)}; after {last:,}: {pick(last)}"


# Figures 3 and 4: why the rounds jump from 2 to 3 feature holders.
RUNTIME_NOTE = (
    "The paper skips the wrap bit of Alg. 3 (η_xr = 0: local truncation) at any |P|; our default "
    "`hannun.trunc = \"exact\"` computes it: one bit product folded into the products at |P| = 2 "
    "(16 rounds a step), a comparison circuit per truncation at |P| ≥ 3 (65 rounds), hence the "
    "jump from 2 to 3 holders.")


def ours_hannun_runtime(rows: list[dict]) -> str:
    """Figures 3 and 4: time and rounds per iteration at each (|P|, |A|)."""
    return "per iteration: " + "; ".join(f"|P| = {r['parties']}, |A| = {r['arms']}: {1e3 * float(r['seconds_per_iteration']):.1f} ms, "
                     f"{float(r['rounds_per_iteration']):.0f} rounds" for r in rows)


def _sweep(rows: list[dict], key: str) -> str:
    """Figures 7 and 8: reward and agreement per value of `key`, one line per variant."""
    parts = []
    for v in dict.fromkeys(r["variant"] for r in rows):
        sel = [r for r in rows if r["variant"] == v]
        parts.append(f"{v}: " + ", ".join(_sweep_point(r, key) for r in sel))
    done = [r for r in rows if r["average_reward"] not in ("", None)]
    if done:
        parts.append(f"float64 reference {float(done[0]['plaintext_average_reward']):.3f}")
    return "; ".join(parts)


def _sweep_point(r: dict, key: str) -> str:
    """One run of a sweep: its reward and agreement, or where the protocol stopped it."""
    if r["average_reward"] in ("", None):
        return f"{r[key]} → {r.get('outcome') or 'no result'}"
    return (f"{r[key]} → {float(r['average_reward']):.3f}"
            f" ({100 * float(r['agreement']):.1f} % same arms)")


def ours_hannun_7(rows: list[dict]) -> str:
    return _sweep(rows, "precision_bits")


def ours_hannun_8(rows: list[dict]) -> str:
    return _sweep(rows, "newton_iterations")


def ours_hannun_table1(rows: list[dict]) -> str:
    recs = [r for r in rows if str(r["parties"]) == "2" and r["median_s"]]
    want = {"add": None, "mul": None, "reciprocal": None, "argmax": 100}
    parts = []
    for op, size in want.items():
        r = next((r for r in recs if r["op"] == op and (size is None or int(r["size"]) == size)), None)
        if r:
            n = int(r["rounds"])
            parts.append(f"{op}{' (|A| = 100)' if size else ''} {n} round{'s' * (n != 1)}, "
                         f"{float(r['median_s']) / float(r['plaintext_s']):,.0f}×")
    return "; ".join(parts) + " (slow-down against numpy in the same run)"


def ours_hannun_bench(rows: list[dict]) -> str:
    return "; ".join(f"|A| = {r['arms']}: {float(r['ms_per_iteration']):.1f} ms/iteration, plaintext "
                     f"{float(r['plaintext_ms_per_iteration']):.3f} ms ({float(r['slowdown']):,.0f}×), "
                     f"{float(r['rounds_per_iteration']):.0f} rounds, agreement {float(r['agreement']):.3f}"
                     for r in rows if r["net"] == "none")


# -- the rows ---------------------------------------------------------------------------------

JDP, O3M, FED, SAMBA, HANNUN = ("Shariff & Sheffet 2018 (JDP-LinUCB)", "Cao et al. 2023 (O3M)",
                                "Dubey & Pentland 2020 (FedUCB)", "Ciucanu et al. 2022 (SAMBA)",
                                "Hannun et al. 2019")
PAPERS = {
    JDP: "The main text has no figure; the authors' experiment (supplementary, not in our copy of "
         "the paper) compares non-private LinUCB with JDP-LinUCB under Wishart, shifted Wishart and "
         "shifted Gaussian noise at d = 5, ε = 1, δ = 0.1, with and without a gap.",
    O3M: "",
    FED: "Figure 1's y-axes carry no numbers we can read from our copy; the paper column states what "
         "its text claims. With Proposition 2's β (≈ 500 at these sizes) every private curve is flat "
         "at any horizon this machine runs, so the rows use a tuned β = 1, declared on the figures "
         "(`feducb.beta`, docs/feducb.md).",
    SAMBA: "",
    HANNUN: "Reward figures (1, 2, 5, 6) run the float64 reference, which chooses the same arms as the "
            "secure protocol (agreement is measured in Figures 7 and 8 and in the Table 1 row); runtime "
            "figures (3, 4, 7, 8) run every party as a process on loopback with CURVE on.",
}

ROWS: tuple[Row, ...] = (
    Row("jdp-experiment", JDP, "the authors' experiment",
        "d = 5, K = 10, ε = 1, δ = 0.1, gap 0 and 0.1", "not in our copy (supplementary)",
        "mpcbandit figure jdp", "jdp_experiment.csv", ("--part", "experiment", "--horizon", "5000", "--runs", "3"),
        ("--part", "experiment", "--paper"),
        "n = 5,000, 3 runs", "n = 10⁵ (the largest that runs in minutes here), 5 runs",
        ours_jdp_experiment, ("jdp_experiment.png",),
        "At ε = 1 the tree's noise dominates the Gram matrix for the whole run and β_t keeps every "
        "private learner exploring: all three stay near a random choice."),
    Row("jdp-eps", JDP, "regret against ε (ours)",
        "the claim: JDP-LinUCB → LinUCB as ε → ∞", "no figure",
        "mpcbandit figure jdp", "jdp_regret_vs_eps.csv",
        ("--part", "eps", "--eps-horizon", "2000", "--runs", "2", "--eps", "1,100,10000"),
        ("--part", "eps", "--paper"),
        "n = 2,000, 2 runs, gap 0.1, ε ∈ {1, 100, 10⁴}", "n = 20,000, 5 runs, gap 0.1, 9 values of ε",
        ours_jdp_eps, ("jdp_regret_vs_eps.png",),
        "Only the Gaussian variant tends to LinUCB: the Wishart degrees of freedom fall to their floor "
        "d + 2 by ε ≈ 1,000, so each release still carries W(L̃²I, mk) and the plain Wishart's "
        "ρ_max/ρ_min stays wide; the shifted Wishart keeps the ratio at 2. Every Wishart release sums "
        "exactly m nodes' noise (the paper's bounds are for m draws)."),
    Row("o3m-4", O3M, "Figure 4 (lossless)",
        "d = 100, K = 10, M = 5, T = 5000, 5 repeats",
        "O3M's regret equals central LinUCB/LinTS; partial > 10× central; ‖θ‖ differences ≈ 0",
        "mpcbandit figure o3m-4", "o3m_fig4.csv", (), ("--paper",), "T = 1000, 2 repeats",
        "T = 5000, 5 repeats", ours_o3m_4, ("o3m_fig4.png",)),
    Row("o3m-5", O3M, "Figure 5 (cost)",
        "T = 5000, M = 5, K = 100, 500, 1000; operation counts",
        "VFUCB/LinUCB ≤ 2×; VFTS/LinTS > 5× at small d, → 1 as d grows; 0.04 GB per step at d = K = 1000",
        "mpcbandit figure o3m-5", "o3m_fig5.csv", ("--ks", "100", "--rounds", "3"), ("--paper",),
        "the paper's counts and our times for d ≤ 200 at K = 100", "our times for d ≤ 1000, K = 100–1000",
        ours_o3m_5, ("o3m_fig5.png",),
        "'Counted' is App. C.1 term by term. Those terms give VFUCB/LinUCB = 2 + (4d − 1)/(d² + d "
        "+ 1) at M = 5 wherever K·d² outweighs the d³ inverse, so above 2 at small d for every K "
        "the paper plots; its '≤ 2×' cannot come from them there. Our copy's Figure 5 carries no "
        "axis values, so where the paper's curves start is not known. Measured seconds weigh "
        "operations unequally (BLAS products against one inverse) and stay lower."),
    Row("o3m-6", O3M, "Figure 6 (partial features; Criteo CTR)",
        "d = 100, K = 10, T = 5000, 5 repeats, N(0, 0.05) noise; full Criteo log, β = 0.6, 5 random partitions",
        "partial (20 %, 80 %) regret > 10× O3M's; partial CTR below VFUCB's",
        "mpcbandit figure o3m-6", "o3m_fig6.csv", ("--paper",), ("--paper",),
        "the paper's size (T = 5000, 5 repeats); Criteo: the shared 1,999-row sample",
        "T = 5000, 5 repeats; Criteo: the shared 1,999-row sample (the full log is not on this machine)",
        ours_o3m_6, ("o3m_fig6.png",),
        "The noise N(0, 0.05) is read as a standard deviation, the only reading that gives the "
        "paper's > 10×. On the Criteo sample only a few dozen replay rounds match, too few to rank the CTRs."),
    Row("o3m-c3", O3M, "Table C.3 (seconds for one round's statistic)",
        "small d = 100, K = 20, M = 5; large d = 500, K = 10, M = 500", paper_table_c3,
        "mpcbandit bench o3m-table-c3", "table_c3.csv", ("--no-he", "--repeats", "3"), ("--paper",),
        "HE skipped, 3 repeats", "HE on the small setting, 5 repeats",
        ours_table_c3, (),
        "The paper's times grow as K·M·d² (~1,250×); ours, vectorised, as K·d². 'Per participant' "
        "times our reading of the paper's quantity (each participant a d × d product on its "
        "zero-padded context); the paper does not say how it computed the statistic."),
    Row("feducb-1a", FED, "Figure 1 (A) privacy budget",
        "T = 10⁷, d = 10, δ = 0.1, ε ∈ [0.1, 10], M ∈ {10, 20, 50, 100}, n = O(M log T), 100 runs",
        "regret falls as ε grows; 'competitive even at large privacy budget'",
        "mpcbandit figure feducb", "fig1a_regret_vs_eps.csv",
        ("--panel", "A", "--beta", "1", "--horizon", "500", "--runs", "1", "--eps", "0.1,1,10"),
        ("--panel", "A", "--beta", "1", "--horizon", "2000", "--runs", "3", "--eps", "0.1,0.3,1,3,10"),
        "T = 500, 1 run, ε ∈ {0.1, 1, 10}, β = 1", "T = 2,000, 3 runs, ε ∈ {0.1, 0.3, 1, 3, 10}, β = 1",
        ours_feducb_a, ("fig1a_regret_vs_eps.png",)),
    Row("feducb-1b", FED, "Figure 1 (B) communication",
        "M = 100, ε = 1, n = O(M^1.5), O(M log T), O(MT), private and not",
        "a trade-off between n and regret (Remark 1)",
        "mpcbandit figure feducb", "fig1b_communication.csv",
        ("--panel", "B", "--beta", "1", "--horizon", "500", "--agents-bc", "20"),
        ("--panel", "B", "--beta", "1", "--horizon", "2000", "--runs", "3", "--agents-bc", "100"),
        "M = 20, T = 500, 1 run, β = 1", "M = 100, T = 2,000, 3 runs, β = 1",
        ours_feducb_b, ("fig1b_communication.png",),
        "Where ours and the paper's part: O(MT) is not the lowest private curve. Without noise "
        "O(M log T) and O(MT) end equal (M agents' pooled data leave extra syncs nothing to buy "
        "at this T), while the privatizer is calibrated for its number of releases n: a tree of "
        "1 + log₂ n levels, so ρ_min (the regularizer, in the row) grows with n and the private "
        "curve pays random-rate regret for longer. Remark 1's gain for O(MT) is an order bound (a "
        "√log T factor); it shows only where it outweighs the deeper tree. O(M^1.5) plays at "
        "random until its first sync."),
    Row("feducb-1c", FED, "Figure 1 (C) dependence on d",
        "M = 100, ε = 1, δ = 0.1, n = O(M log T), d ∈ {8, …, 128}", "'essentially quadratic' in d",
        "mpcbandit figure feducb", "fig1c_dimension.csv",
        ("--panel", "C", "--beta", "1", "--horizon", "500", "--agents-bc", "20", "--dims-c", "4,8,16"),
        ("--panel", "C", "--beta", "1", "--horizon", "2000", "--runs", "3", "--agents-bc", "100",
         "--dims-c", "8,16,32,64"),
        "M = 20, T = 500, 1 run, d ∈ {4, 8, 16}, β = 1", "M = 100, T = 2,000, 3 runs, d ≤ 64, β = 1",
        ours_feducb_c, ("fig1c_dimension.png",),
        "Where ours and the paper's part: ours is flat in d, not quadratic. With β = 1 the UCB "
        "bonus (≤ β/√(M·ρ_min), in the row) is a small fraction of the smallest gap, so the agents "
        "act greedily on the privatised ridge estimate: each curve gains regret at the random rate "
        "until the pooled statistics rise above the privatizer's noise, then stops (90 % of it by "
        "the t in the row). Neither phase grows with d here: the noise projected on a unit-norm "
        "action has a scale free of d, and after the burn-in M·t samples far exceed d ≤ 64. A "
        "quadratic d enters through a radius that grows with d, as Prop. 2's does; the paper does "
        "not state the β its curves used, and with Prop. 2's every private curve stays near the "
        "random one."),
    Row("samba-8c", SAMBA, "Figure 8 (c) cumulative rewards",
        "N = 5·10⁴ … 10⁵, K = 100, MovieLens and Jester, six algorithms",
        "secure = non-secure (Theorem 2); Thompson best on both",
        "mpcbandit figure samba-8", "rewards.csv", ("--n-list", "", "--k-list", "", "--reward-n", "10000"),
        ("--n-list", "", "--k-list", "", "--reward-n", "100000"),
        "N = 10⁴, K = 100", "N = 10⁵, K = 100",
        ours_samba_rewards, ("samba_fig8_movielens.png", "samba_fig8_jester.png"),
        "An audit of the authors' prototype (not repeated here) found its Thompson rewards about 1 % "
        "off ours at N = 10⁵ because it reseeds its generator identically before every arm's Beta "
        "draw; we do not copy that. Which algorithm is best depends on N and the dataset."),
    Row("samba-8ab", SAMBA, "Figure 8 (a, b) time",
        "one process, every party's computation, N = 10⁵, K = 10 … 100",
        "K = 10: 92–109 s; K = 100: 808–976 s (Pursuit 190 s, 1,688 s)",
        "mpcbandit figure samba-8", "times.csv",
        ("--datasets", "movielens", "--algorithms", "ucb", "--n-list", "", "--k-list", "10,100",
         "--n-for-k", "1100", "--reward-n", "0"),
        ("--datasets", "movielens", "--algorithms", "ucb,thompson", "--n-list", "", "--k-list", "10,100",
         "--n-for-k", "5100", "--reward-n", "0"),
        "UCB, N = 1,100, extrapolated to 10⁵", "UCB and Thompson, N = 5,100, extrapolated to 10⁵",
        ours_samba_times, ("samba_fig8_movielens.png",),
        "The paper's quantity is every party in one process; ours is also measured with every party "
        "its own process, beside a bare pyzmq relay of the same messages (the transport's floor)."),
    Row("hannun-1", HANNUN, "Figure 1 (reward during training)",
        "MNIST, |A| = 10, 60,000 steps, 10 runs, ε ∈ {0, 0.01, 0.1, 0.5}",
        "rewards equal to the plain-text implementation's",
        "mpcbandit figure hannun-1", "hannun_fig1.csv", ("--steps", "60000", "--runs", "1"), ("--paper",),
        "MNIST, 60,000 steps (one sweep), 1 run", "MNIST, 60,000 steps, 10 runs",
        ours_hannun_1, ("hannun_fig1.png",)),
    Row("hannun-2", HANNUN, "Figure 2 (reward against η)",
        "MNIST, T ∈ {10³, 10⁴, 6·10⁴}, 5 runs", "some exploration beats η = ∞ (ε = 0)",
        "mpcbandit figure hannun-2", "hannun_fig2.csv", ("--sizes", "1000,5000,10000", "--runs", "1"), ("--paper",),
        "MNIST, T ∈ {1,000, 5,000, 10,000}, 1 run", "MNIST, T ∈ {10³, 10⁴, 6·10⁴}, 5 runs",
        ours_hannun_2, ("hannun_fig2.png",),
        "At T = 6·10⁴ the greedy policy (η = ∞) can come out first: the row says how close the "
        "best finite η is. Exploration pays while the model is poor (T = 10³, 10⁴) and its gain "
        "is averaged away over 60,000 steps. The paper's text says only that some η beats η = ∞, "
        "not at which T, and our copy's figure carries no values."),
    Row("hannun-3", HANNUN, "Figure 3 (runtime against |A|)",
        "|A| = 10 … 100, |P| = 2 … 4", "overhead dominates for |A| ≤ 20, quadratic for |A| ≥ 40",
        "mpcbandit figure hannun-3", "hannun_fig3.csv", (), ("--paper",),
        "|P| = 2, |A| ≤ 40, 100 steps", "|P| ∈ {2, 3, 4}, |A| ≤ 100, 300 steps",
        ours_hannun_runtime, ("hannun_fig3.png",), RUNTIME_NOTE),
    Row("hannun-4", HANNUN, "Figure 4 (runtime against |P|)",
        "|P| = 2 … 6, |A| ∈ {10, 50, 100}", "O(|P|²)",
        "mpcbandit figure hannun-4", "hannun_fig4.csv", (), ("--paper",),
        "|P| ≤ 4, |A| = 10, 100 steps", "|P| ≤ 6, |A| ∈ {10, 50, 100}, 300 steps",
        ours_hannun_runtime, ("hannun_fig4.png",), RUNTIME_NOTE),
    Row("hannun-5", HANNUN, "Figure 5 (reward against η, more arms)",
        "K-means arms, |A| ∈ {10, 20, 40, 80}, σ = 1/2", "the best η grows slightly with |A|",
        "mpcbandit figure hannun-5", "hannun_fig5.csv", ("--steps", "5000", "--runs", "1"), ("--paper",),
        "K-means arms, |A| ∈ {5, 10}, 5,000 steps, 1 run", "|A| ∈ {10, 20, 40, 80}, 60,000 steps, 5 runs",
        ours_hannun_5, ("hannun_fig5.png",)),
    Row("hannun-6", HANNUN, "Figure 6 (membership inference)",
        "MNIST, 200 runs, ε ∈ {0, 0.01, 0.1, 0.5}", "advantage 1–2 % early, below 0.75 % later",
        "mpcbandit figure hannun-6", "hannun_fig6.csv", ("--steps", "20000", "--runs", "3"), ("--paper",),
        "MNIST, 20,000 steps, 3 runs", "MNIST, 60,000 steps, 200 runs",
        ours_hannun_6, ("hannun_fig6.png",)),
    Row("hannun-7", HANNUN, "Figure 7 (precision L)",
        "MNIST, L = 14 … 26", "best at L = 20; drops below 18 bits and above 22 (wrap-around errors)",
        "mpcbandit figure hannun-7", "hannun_fig7.csv", (), ("--paper",),
        "MNIST, 300 steps, local and exact truncation", "MNIST, 2,000 steps, L = 14 … 26, local and exact",
        ours_hannun_7, ("hannun_fig7.png",),
        "Local truncation (the paper's kind) wraps with probability |x|·2^(2L)/2^64 per call, 16× "
        "more often for every 2 bits of L (docs/hannun.md counts the wraps per sweep); exact truncation "
        "(`hannun.trunc = \"exact\"`) never wraps. A line moves only if a wrap happens within the run's "
        "steps, so short runs cannot show the paper's drop above 22 bits."),
    Row("hannun-8", HANNUN, "Figure 8 (Newton iterations)",
        "MNIST, 1 … 10 iterations", "three iterations suffice",
        "mpcbandit figure hannun-8", "hannun_fig8.csv", (), ("--paper",),
        "MNIST, 300 steps, the paper's start and our linear one", "MNIST, 2,000 steps, 1 … 10 iterations",
        ours_hannun_8, ("hannun_fig8.png",)),
    Row("hannun-table1", HANNUN, "Table 1 (rounds and slow-down of the key operations)",
        "|P| = 2, |A| = 100", "add 0 rounds 11×; mul 2, 380×; reciprocal 30, 6,000×; argmax O(P + log A), 34,000×",
        "mpcbandit bench mpc-ops", "mpc_ops.csv", ("--parties", "2", "--rounds-parties", "2"),
        ("--paper",),
        "2 parties as processes, 5 repeats, size 1000", "2 and 3 parties as processes, 21 repeats",
        ours_hannun_table1, (), "The paper's slow-down is against PyTorch; ours against numpy, same run."),
    Row("hannun-iteration", HANNUN, "a whole iteration (§5: ~500× at |P| = 2, |A| = 10)",
        "|P| = 2, |A| = 10", "nearly 500× slower than a regular implementation",
        "mpcbandit bench hannun", "bench_hannun.csv", ("--nets", "none", "--iterations", "200"),
        ("--nets", "none,lan", "--iterations", "1000"),
        "|A| ∈ {10, 100}, 200 iterations, loopback", "|A| ∈ {10, 100}, 1,000 iterations, loopback and LAN",
        ours_hannun_bench, ()),
)

BY_KEY = {r.key: r for r in ROWS}


def command(row: Row, tier: str, out: Path) -> list[str]:
    """The row's command line for a tier (`mpcbandit bench|figure NAME ...`), writing into `out`."""
    return [sys.executable, "-m", *row.script.split(), *(row.quick if tier == "quick" else row.full),
            "--out", str(out)]


def shown(cmd: list[str]) -> str:
    """A command as a reader would type it from the repository root (without the output option)."""
    return shlex.join(cmd[2:-2])


def run_row(row: Row, tier: str, out: Path, timeout: float) -> dict:
    """Run one row's command into out/ROW; record what ran, how long and how it ended."""
    folder = out / row.key
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    cmd = command(row, tier, folder)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    with (folder / "log.txt").open("w") as log:
        try:
            rc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=timeout).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    meta = {"key": row.key, "tier": tier, "command": shown(cmd), "seconds": round(time.perf_counter() - t0, 1),
            "exit": rc, "finished": datetime.datetime.now().isoformat(timespec="minutes"),
            "commit": git_commit(ROOT) or "", "load_before": round(load, 2)}
    (folder / "row.json").write_text(json.dumps(meta, indent=1))
    return meta


def cell(text: str) -> str:
    """Text safe inside a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def report(out: Path, image_prefix: str) -> str:
    """The markdown page of every row that has run in `out` (rows not run are listed as such)."""
    metas = {}
    for row in ROWS:
        p = out / row.key / "row.json"
        if p.exists():
            metas[row.key] = json.loads(p.read_text())
    total = sum(m["seconds"] for m in metas.values())
    commits = sorted({m["commit"] for m in metas.values()})
    lines = ["# Reproducing the papers' tables and figures", "",
             "Generated by `python scripts/reproduce.py` from the outputs of its last run "
             f"({len(metas)} of {len(ROWS)} rows, {total / 60:.1f} min of row time on this machine, commit "
             f"{', '.join(commits) or '-'}); do not edit by hand: change the script and rerun it. Each row "
             "says its size (quick: reduced, under 30 minutes for all rows on 2 cores; paper: the paper's "
             "sizes where this machine can, else the largest that ran) and the command that made it.", ""]
    for paper in dict.fromkeys(r.paper for r in ROWS):
        lines += [f"## {paper}", ""]
        if PAPERS[paper]:
            lines += [PAPERS[paper], ""]
        lines += ["| row | paper's setting | paper | our setting | ours | made by |", "|---|---|---|---|---|---|"]
        pictures, notes = [], []
        for row in (r for r in ROWS if r.paper == paper):
            meta = metas.get(row.key)
            folder = out / row.key
            if meta is None:
                paper_result = row.paper_result if isinstance(row.paper_result, str) else ""
                ours, setting, made = "*not run*", row.quick_size, f"`{shown(command(row, 'quick', Path('OUT')))}`"
            else:
                try:
                    paper_result, ours = row_numbers(row, folder)
                    ours = ours or f"*no output* (exit {meta['exit']}, see {row.key}/log.txt)"
                except (KeyError, ValueError, IndexError, ZeroDivisionError) as e:
                    paper_result, ours = "", f"*unreadable output* ({type(e).__name__}: {e})"
                setting = f"{meta['tier']}: " + (row.quick_size if meta["tier"] == "quick" else row.full_size)
                # the command that makes this row now (row.json keeps the one that ran)
                made = (f"`{shown(command(row, meta['tier'], folder))}` ({meta['seconds']:.0f} s, "
                        f"{meta['finished'][:10]})")
            lines.append(f"| {cell(row.name)} | {cell(row.paper_setting)} | {cell(paper_result)} | "
                         f"{cell(setting)} | {cell(ours)} | {cell(made)} |")
            if meta is not None:
                pictures += [(row.name, row.key, img) for img in row.images if (folder / img).exists()]
            if row.note:
                notes.append(f"- **{row.name}.** {row.note}")
        lines.append("")
        lines += notes + ([""] if notes else [])
        for name, key, img in pictures:
            lines += [f"![{name}]({image_prefix}{key}/{img})", ""]
    return "\n".join(lines)


def publish(out: Path, page: str) -> None:
    """Copy each row's figures and CSVs to docs/reproduction/ROW/ and write docs/reproduction.md."""
    target = DOCS / "reproduction"
    for row in ROWS:
        src = out / row.key
        if not (src / "row.json").exists():
            continue
        dst = target / row.key
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for f in [*src.glob("*.png"), *src.glob("*.csv"), *src.glob("*.json")]:
            shutil.copy2(f, dst / f.name)
    (DOCS / "reproduction.md").write_text(page + "\n")
    print(f"wrote {DOCS / 'reproduction.md'} and {target}/")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="reduced sizes: every row in under 30 minutes")
    size.add_argument("--paper", action="store_true", help="the papers' sizes where this machine can (hours)")
    size.add_argument("--report", action="store_true", help="run nothing: rebuild the page from OUT")
    size.add_argument("--list", action="store_true", help="list the rows and their commands")
    ap.add_argument("--only", nargs="+", metavar="ROW", choices=sorted(BY_KEY), help="run these rows only")
    ap.add_argument("--out", type=Path, default=Path("runs/reproduce"), help="output folder (default runs/reproduce)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds before a row is stopped (default 3600)")
    ap.add_argument("--publish", action="store_true",
                    help="write docs/reproduction.md and copy figures and CSVs to docs/reproduction/")
    args = ap.parse_args(argv)
    if args.list:
        for row in ROWS:
            print(f"{row.key:<18} {row.paper.split(' (')[0]:<22} {row.name}\n{'':<18} quick: "
                  f"{shown(command(row, 'quick', Path('OUT')))}\n{'':<18} paper: {shown(command(row, 'paper', Path('OUT')))}")
        return 0
    if not (args.quick or args.paper or args.report):
        ap.error("choose --quick, --paper, --report or --list")
    out = args.out.resolve()
    failed = []
    if not args.report:
        tier = "quick" if args.quick else "paper"
        rows = [BY_KEY[k] for k in args.only] if args.only else list(ROWS)
        t0 = time.perf_counter()
        for i, row in enumerate(rows, 1):
            print(f"[{i}/{len(rows)}] {row.key}: {shown(command(row, tier, out / row.key))}", flush=True)
            meta = run_row(row, tier, out, args.timeout)
            print(f"    exit {meta['exit']} after {meta['seconds']:.0f} s "
                  f"(total {(time.perf_counter() - t0) / 60:.1f} min)", flush=True)
            if meta["exit"] != 0:
                failed.append(row.key)
    page = report(out, "")
    out.mkdir(parents=True, exist_ok=True)
    (out / "reproduction.md").write_text(page + "\n")
    print(f"wrote {out / 'reproduction.md'}")
    if args.publish:
        publish(out, report(out, "reproduction/"))
    if failed:
        print(f"rows that failed (see OUT/ROW/log.txt): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
