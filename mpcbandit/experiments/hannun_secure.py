"""Hannun et al. (2019) from secure runs, every party its own process on loopback: Figures 3
and 4 (runtime against |A| and |P|), 7 and 8 (reward against precision bits and Newton
iterations) as `mpcbandit figure hannun-3|4|7|8`, and a whole iteration beside the float64
reference as `mpcbandit bench hannun`.
"""

from __future__ import annotations

import json
import os

import click

from mpcbandit.errors import PartyFailed, ProtocolError
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    choice_list,
    experiment_command,
    int_list,
    shipped_config,
    sized_option,
)
from mpcbandit.experiments.hannun import data_option, kind_of_data
from mpcbandit.launch import run_local

__all__ = ["bench", "figure_3", "figure_4", "figure_7", "figure_8", "secure_run"]

CONFIG = "hannun-synthetic.toml"
TRUNCATIONS = {"local": "local truncation (wraps)", "exact": "exact truncation (no wraps)"}
RUNTIME_COLUMNS = ["arms", "parties", "seconds_per_iteration", "rounds_per_iteration",
                   "online_bytes_per_iteration_feature_holder",
                   "all_bytes_per_iteration_feature_holder", "load_1min"]
#: where the figures' numbers come from (said in --help and under every table)
SECURE = "the secure protocol, every party its own process on loopback"
SECURE_BESIDE_FLOAT64 = (SECURE + "; the agreement and plaintext columns come from its float64 "
                         "simulation on the same exploration draws")


def secure_run(out: Output, **section) -> dict:
    """The summary of one secure run of the shipped Hannun config, [hannun] keys overridden."""
    sets = [f"hannun.{k}={json.dumps(v)}" for k, v in section.items()]
    tag = "-".join(f"{k}{v}" for k, v in section.items()) or "default"
    return run_local(shipped_config(CONFIG, sets), out.folder / "runs" / tag,
                     echo=lambda *_: None)


def _busiest_holder(summary: dict) -> float:
    return max(v for k, v in summary["bytes_per_step_by_party"].items()
               if k.startswith("feature_holder"))


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def _runtime_grid(out: Output, arms: list[int], parties: list[int], steps: int) -> list[list]:
    """One secure run per (|P|, |A|): time, rounds and bytes per iteration."""
    rows = []
    for n in parties:
        for a in arms:
            s = secure_run(out, arms=a, feature_holders=n, iterations=steps)
            rows.append([a, n, s["seconds_per_step"], s["critical_rounds_per_step"],
                         s["online_bytes_per_step_feature_holder"], _busiest_holder(s), _load()])
            click.echo(f"|P| = {n}, |A| = {a}: {1e3 * s['seconds_per_step']:.1f} ms, "
                       f"{s['critical_rounds_per_step']:.0f} rounds per iteration")
    return rows


def _runtime_figure(out: Output, stem: str, rows: list[list], along: str, title: str) -> None:
    """Time and rounds per iteration against `along` ("arms" or "parties"), a line per other."""
    x_at, line_at = (0, 1) if along == "arms" else (1, 0)
    line_name = "|P|" if along == "arms" else "|A|"
    out.table(stem, RUNTIME_COLUMNS, rows, title)
    panels = []
    for col, ylabel in ((2, "seconds per iteration"), (3, "rounds per iteration")):
        curves = [Curve(f"{line_name} = {v}", [r[x_at] for r in rows if r[line_at] == v],
                        [r[col] for r in rows if r[line_at] == v])
                  for v in dict.fromkeys(r[line_at] for r in rows)]
        panels.append(Panel("", "arms |A|" if along == "arms" else "parties |P|", ylabel, curves))
    out.figure(stem, panels, title)


timing_steps = sized_option("--steps", int, 100, 300, "Iterations per run (the time per "
                            "iteration is their mean; the paper's figures are per iteration)")


@experiment_command("hannun-3", "|A| = 10 … 100, |P| ∈ {2, 3, 4}, 300 iterations per point",
                    short_help="Fig. 3: secure protocol's seconds and rounds per step by |A|",
                    computed_by=SECURE)
@sized_option("--arms", int_list, [5, 10, 20, 40], [10, 20, 40, 60, 80, 100], "Arm counts |A|.")
@sized_option("--parties", int_list, [2], [2, 3, 4], "Feature-holder counts |P|, a line each.")
@timing_steps
def figure_3(out: Output, paper: bool, arms: list[int], parties: list[int], steps: int) -> None:
    """Hannun et al. (2019) Figure 3: seconds (and rounds) per iteration of the secure protocol
    against the number of arms, one line per number of feature holders; every party its own
    process on loopback. Writes hannun_fig3.csv/.md/.png."""
    rows = _runtime_grid(out, arms, parties, steps)
    _runtime_figure(out, "hannun_fig3", rows, "arms", "Hannun et al. Fig. 3: runtime against "
                    f"|A| ({steps} iterations per point, {out.machine})")


@experiment_command("hannun-4", "|P| = 2 … 6, |A| ∈ {10, 50, 100}, 300 iterations per point",
                    short_help="Fig. 4: secure protocol's seconds and rounds per step by |P|",
                    computed_by=SECURE)
@sized_option("--parties", int_list, [2, 3, 4], [2, 3, 4, 5, 6], "Feature-holder counts |P|.")
@sized_option("--arms", int_list, [10], [10, 50, 100], "Arm counts |A|, a line each.")
@timing_steps
def figure_4(out: Output, paper: bool, parties: list[int], arms: list[int], steps: int) -> None:
    """Hannun et al. (2019) Figure 4: seconds (and rounds) per iteration of the secure protocol
    against the number of feature holders, one line per number of arms; every party its own
    process on loopback. Writes hannun_fig4.csv/.md/.png."""
    rows = _runtime_grid(out, arms, parties, steps)
    _runtime_figure(out, "hannun_fig4", rows, "parties", "Hannun et al. Fig. 4: runtime against "
                    f"|P| ({steps} iterations per point, {out.machine})")


def _stopped(e: PartyFailed) -> str | None:
    """Where and why the protocol itself stopped a run (a wrap can corrupt the shares: e.g. an
    opened selection that is not one-hot), or None when the run failed for another reason."""
    err = ProtocolError.found_in(e.reason)
    if err is None:
        return None
    why = err.reason.split(": ")[0]  # the reason, without the values it quotes
    return f"stopped at {err.tag}: {why} (from {err.peer})"


def _reward_sweep(out: Output, key: str, values: list[int], stem: str, xlabel: str,
                  variants: dict[str, dict], data: str | None, steps: int, title: str) -> None:
    """Average reward and agreement with the float64 run per value of `key`, a line per variant;
    a run the protocol stops is a row that says where and why, and the sweep goes on."""
    kind = kind_of_data(data)
    rows, curves = [], []
    for label, extra in variants.items():
        for v in values:
            # one exploration stream for every point: rewards differ only by what `key` changes
            try:
                s = secure_run(out, data=kind, iterations=steps, exploration="seeded", **extra,
                               **{key: v})
            except PartyFailed as e:
                outcome = _stopped(e)
                if outcome is None:
                    raise
                rows.append([label, v, None, None, None, None, _load(), outcome])
                click.echo(f"{label}, {key} = {v}: {outcome}")
                continue
            rows.append([label, v, s["average_reward"], s.get("agreement_with_replay"),
                         s["replay_cumulative_reward"] / steps, s["critical_rounds_per_step"],
                         _load(), "completed"])
            click.echo(f"{label}, {key} = {v}: reward {s['average_reward']:.4f}, same arms as "
                       f"float64 {s.get('agreement_with_replay')}")
        mine = [r for r in rows if r[0] == label and r[2] is not None]
        curves.append(Curve(label, [r[1] for r in mine], [r[2] for r in mine]))
    title = f"{title} ({kind}, T = {steps:,})"
    out.table(stem, ["variant", key, "average_reward", "agreement", "plaintext_average_reward",
                     "rounds_per_iteration", "load_1min", "outcome"], rows, title)
    out.figure(stem, [Panel("", xlabel, "average reward", curves, logx=False)], title)


@experiment_command("hannun-7", "L = 14 … 26, 2,000 steps",
                    short_help="Fig. 7: secure protocol's reward against fixed-point bits",
                    computed_by=SECURE_BESIDE_FLOAT64)
@sized_option("--values", int_list, [14, 18, 20, 22, 24, 26], list(range(14, 27)),
              "Fixed-point precision bits L")
@sized_option("--steps", int, 300, 2_000, "Steps per run (T)")
@click.option("--trunc", type=choice_list(*TRUNCATIONS), default="local,exact",
              help="Truncations, a line each (the paper's local one wraps; exact never does).")
@data_option
def figure_7(out: Output, paper: bool, values: list[int], steps: int, trunc: list[str],
             data: str | None) -> None:
    """Hannun et al. (2019) Figure 7: average reward of the secure protocol against the
    fixed-point precision L, with the share of steps whose arm equals the float64 run's.
    Writes hannun_fig7.csv/.md/.png."""
    _reward_sweep(out, "precision_bits", values, "hannun_fig7", "fixed-point precision bits L",
                  {TRUNCATIONS[t]: {"trunc": t} for t in trunc}, data, steps,
                  "Hannun et al. Fig. 7: reward against precision")


@experiment_command("hannun-8", "1 … 10 iterations, 2,000 steps",
                    short_help="Fig. 8: secure protocol's reward against Newton iterations",
                    computed_by=SECURE_BESIDE_FLOAT64)
@sized_option("--values", int_list, [1, 2, 3, 5], list(range(1, 11)),
              "Newton-Raphson iterations of the reciprocal")
@sized_option("--steps", int, 300, 2_000, "Steps per run (T)")
@click.option("--reciprocal-init", type=choice_list("paper", "linear"), default="paper,linear",
              help="Newton starts, a line each (the paper's and ours).")
@data_option
def figure_8(out: Output, paper: bool, values: list[int], steps: int, reciprocal_init: list[str],
             data: str | None) -> None:
    """Hannun et al. (2019) Figure 8: average reward of the secure protocol against the number
    of Newton-Raphson iterations, with the share of steps whose arm equals the float64 run's.
    Writes hannun_fig8.csv/.md/.png."""
    _reward_sweep(out, "newton_iterations", values, "hannun_fig8", "Newton-Raphson iterations",
                  {f"{i} start": {"reciprocal_init": i} for i in reciprocal_init}, data, steps,
                  "Hannun et al. Fig. 8: reward against Newton iterations")


BENCH_COLUMNS = ["arms", "parties", "net", "iterations", "ms_per_iteration",
                 "plaintext_ms_per_iteration", "slowdown", "rounds_per_iteration",
                 "online_kb_sent+recv", "online_kb_sent", "all_kb_busiest_holder", "dealer_kb",
                 "wan_estimate_ms", "agreement", "reward", "plaintext_reward", "load_1min"]


def bench_row(out: Output, arms: int, parties: int, net: str, iterations: int,
              sets: list[str]) -> list:
    """One secure run and its float64 reference on the same config: the bench's row."""
    sets = [f"hannun.arms={arms}", f"hannun.feature_holders={parties}",
            f"hannun.iterations={iterations}", f"run.net={net}", *sets]
    tag = f"a{arms}-p{parties}-{net}"
    quiet = lambda *_: None  # noqa: E731
    secure = run_local(shipped_config(CONFIG, sets), out.folder / tag, echo=quiet)
    plain = run_local(shipped_config(CONFIG, sets), out.folder / f"{tag}-plaintext",
                      plaintext=True, echo=quiet)
    t = secure["steps"]
    ms, plain_ms = secure["seconds_per_step"] * 1e3, plain["protocol_wall_s"] / t * 1e3
    return [arms, parties, net, t, round(ms, 2), round(plain_ms, 4),
            round(ms / plain_ms) if plain_ms > 0 else None,
            round(secure["critical_rounds_per_step"], 2),
            round(secure["online_bytes_per_step_feature_holder"] / 1e3, 1),
            round(secure["online_bytes_sent_per_step_feature_holder"] / 1e3, 1),
            round(_busiest_holder(secure) / 1e3, 1),
            round(secure["bytes_per_step_by_party"]["dealer.0"] / 1e3, 1),
            round(secure["estimate_s"]["wan"] / secure["steps"] * 1e3, 1),
            secure.get("agreement_with_replay"), secure["cumulative_reward"],
            plain["cumulative_reward"], _load()]


@experiment_command("hannun", "2,000 iterations per run (|A|, |P| and nets as given)",
                    short_help="Hannun's secure protocol per step beside float64")
@click.option("--arms", type=int_list, default="10,100", help="Arm counts |A|.")
@click.option("--parties", type=int_list, default="2", help="Feature-holder counts |P|.")
@click.option("--nets", type=choice_list("none", "lan", "wan"), default="none,lan",
              help="Emulated networks (lan, wan: delay and bandwidth on loopback).")
@sized_option("--iterations", int, 300, 2_000, "Iterations per run")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", show_default="none",
              help="A config override for every run, e.g. hannun.newton_iterations=3.")
def bench(out: Output, paper: bool, arms: list[int], parties: list[int], nets: list[str],
          iterations: int, sets: tuple[str, ...]) -> None:
    """Hannun et al. (2019) Algorithm 1 with every party its own process (feature holders,
    arm-puller, environment, reward holder, dealer): milliseconds, rounds and bytes per
    iteration beside the float64 reference of the same config in the same run (the paper's
    "~500x slower than a regular implementation"), and the WAN estimate per iteration (the
    time without delays + hops x one-way delay + bytes / bandwidth, docs/summary.md). Writes bench_hannun.csv/.md; each run's folder is kept.
    """
    rows = []
    for a in arms:
        for n in parties:
            for net in nets:
                row = bench_row(out, a, n, net, iterations, list(sets))
                rows.append(row)
                click.echo(f"|A| = {a}, |P| = {n}, net {net}: {row[4]} ms per iteration "
                           f"(float64 {row[5]} ms, {row[6]}x), {row[7]} rounds, "
                           f"agreement {row[13]}")
    out.table("bench_hannun", BENCH_COLUMNS, rows,
              f"Hannun et al. Algorithm 1, {iterations} iterations per run ({out.machine})")
