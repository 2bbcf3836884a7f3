"""The privacy-cost frontier: `mpcbandit frontier CONFIG` runs every mechanism on one task.

Each mechanism (experiments/frontier_mechanisms.py) is run with real processes, by the launcher
of `mpcbandit run`, once per seed on the common linear task at net none (its regret, seconds,
rounds and bytes per step), and once more on the first seed under each emulated network of
`--net` for `timing_steps` steps (its seconds per step there). Nothing in a row is computed from
another row or from a formula: every figure is read from a run's summary. Writes frontier.csv,
frontier.md and frontier.png; the run folders stay under OUT/runs.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path

import click
import numpy as np

from mpcbandit.data.common_task import COMMON, mnist_components
from mpcbandit.data.linear_task import REWARDS, USERS
from mpcbandit.data.mnist_task import ARMS
from mpcbandit.data.tasks import MNIST_TRAIN_SIZE, require_mnist
from mpcbandit.errors import ConfigError
from mpcbandit.experiments.common import (
    Curve,
    Output,
    Panel,
    choice_list,
    experiment_command,
    mean_std,
    shipped_config,
)
from mpcbandit.experiments.frontier_mechanisms import MECHANISMS, FrontierTask, Mechanism
from mpcbandit.launch import run_local
from mpcbandit.shipped_configs import ConfigFile

__all__ = ["COLUMNS", "frontier", "frontier_panels", "random_regret", "read_frontier_config"]

COLUMNS = ["mechanism", "epsilon", "private", "guarantee", "each_party_sees", "regret",
           "regret_std", "runs", "seconds_per_step", "rounds_per_step", "bytes_per_step",
           "lan_seconds_per_step", "wan_seconds_per_step", "processes"]
NETS = ("none", "lan", "wan")
TASK_KEYS = {"dims": int, "arms": int, "steps": int, "seeds": list, "holders": int, "agents": int,
             "timing_steps": int, "kind": str, "rewards": str, "reward_std": (int, float)}
OPTIONAL = ("kind", "rewards", "reward_std")  # FrontierTask's defaults: linear, bernoulli, 0.1
SIZED_KEYS = ("steps", "seeds", "timing_steps")  # [paper] may set these
KINDS = {int: "an integer", list: "a list", str: "a string", (int, float): "a number"}


def _checked(table: dict, where: str, keys: dict) -> dict:
    for key, value in table.items():
        if key not in keys:
            raise ConfigError(f"{where}.{key}", f"unknown key (known: {', '.join(keys)})")
        if not isinstance(value, keys[key]) or isinstance(value, bool):
            raise ConfigError(f"{where}.{key}", f"{value!r} is not {KINDS[keys[key]]}")
    return table


def _check_kind(task: dict, path: Path) -> None:
    """The task's kind and rewards: linear (bernoulli or gaussian) or mnist (10 digits)."""
    kind, rewards = task.get("kind", "linear"), task.get("rewards", "bernoulli")
    if kind not in COMMON:
        raise ConfigError(f"{path}: task.kind", f"{kind!r}: one of {', '.join(COMMON)}")
    if rewards not in REWARDS:
        raise ConfigError(f"{path}: task.rewards", f"{rewards!r}: one of {', '.join(REWARDS)}")
    if task.get("reward_std", 0.1) < 0:
        raise ConfigError(f"{path}: task.reward_std", f"{task['reward_std']} must be >= 0")
    if kind == "mnist":
        if rewards != "bernoulli":
            raise ConfigError(f"{path}: task.rewards", "the mnist task's reward is 1 for the "
                              "true digit: gaussian rewards are the linear task's")
        mnist_components(ARMS * task["dims"], task["arms"], f"{path}: task", "dims", "arms")
        if task["steps"] > MNIST_TRAIN_SIZE:
            raise ConfigError(f"{path}: task.steps", f"{task['steps']} steps: one user a step, "
                              f"and MNIST has {MNIST_TRAIN_SIZE} training images")
        require_mnist(f"{path}: task.kind", "kind = 'mnist'")


def read_frontier_config(path: Path, paper: bool) -> tuple[FrontierTask, list[str], list[float]]:
    """The task, the mechanisms and the epsilons of a frontier config (its [paper] sizes if
    `paper`); a ConfigError names the key and the file."""
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(str(path), "frontier config file not found") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(str(path), f"not valid TOML: {e}") from None
    unknown = set(raw) - {"task", "paper", "mechanisms"}
    if unknown:
        raise ConfigError(f"{path}: {sorted(unknown)[0]}", "unknown table (known: task, paper, "
                          "mechanisms)")
    task = _checked(dict(raw.get("task", {})), f"{path}: task", TASK_KEYS)
    missing = [k for k in TASK_KEYS if k not in task and k not in OPTIONAL]
    if missing:
        raise ConfigError(f"{path}: task.{missing[0]}", "missing")
    if paper:
        task |= _checked(dict(raw.get("paper", {})), f"{path}: paper",
                         {k: TASK_KEYS[k] for k in SIZED_KEYS})
    for key in ("dims", "arms", "steps", "holders", "agents", "timing_steps"):
        if task[key] < 1:
            raise ConfigError(f"{path}: task.{key}", f"{task[key]} must be >= 1")
    if task["dims"] < max(2, task["holders"]):
        raise ConfigError(f"{path}: task.dims", f"{task['dims']} features per arm (mnist: image "
                          f"components): need >= 2 and >= holders = {task['holders']}")
    _check_kind(task, path)
    if not task["seeds"] or not all(isinstance(s, int) for s in task["seeds"]):
        raise ConfigError(f"{path}: task.seeds", f"{task['seeds']!r}: a list of integer seeds")
    mech = _checked(dict(raw.get("mechanisms", {})), f"{path}: mechanisms",
                    {"run": list, "epsilons": list})
    names = mech.get("run", list(MECHANISMS))
    if not names:
        raise ConfigError(f"{path}: mechanisms.run", "empty: name at least one mechanism")
    for name in names:
        if name not in MECHANISMS:
            raise ConfigError(f"{path}: mechanisms.run", f"unknown mechanism {name!r} (known: "
                              f"{', '.join(MECHANISMS)})")
    epsilons = mech.get("epsilons", [1.0])
    if not epsilons or not all(isinstance(e, (int, float)) and e > 0 for e in epsilons):
        raise ConfigError(f"{path}: mechanisms.epsilons", f"{epsilons!r}: positive numbers")
    return FrontierTask(**task), names, [float(e) for e in epsilons]


def _run(m: Mechanism, task: FrontierTask, seed: int, steps: int, eps: float | None, net: str,
         folder: Path) -> dict:
    """One run of mechanism m; its summary (a failure names the mechanism and the folder)."""
    sets = m.overrides(task, seed, steps, eps) + [f"seed={seed}", f"run.net={net!r}"]
    try:
        cfg = shipped_config(m.config, sets)
        return run_local(cfg, folder, plaintext=m.plaintext, echo=lambda *_: None)
    except Exception as e:
        raise click.ClickException(f"frontier: {m.name} (epsilon {eps}, seed {seed}, net {net}) "
                                   f"failed: {e} — its run folder is {folder}; the rows before "
                                   "it are in frontier.csv") from e


def _per_step(summary: dict) -> float:
    return summary["protocol_wall_s"] / summary["steps"]


def _row(m: Mechanism, eps: float | None, task: FrontierTask, nets: list[str], runs: Path) -> dict:
    """Every seed at net none, then a timing run per emulated network."""
    label = f"{m.name}" + (f"-eps{eps:g}" if eps is not None else "")
    summaries, regrets = [], []
    for seed in task.seeds:
        s = _run(m, task, seed, task.steps, eps, "none", runs / f"{label}-seed{seed}")
        summaries.append(s)
        regrets.append(m.run_regret(s, task, seed))
        click.echo(f"  {label} seed {seed}: regret {regrets[-1]:.2f}, "
                   f"{_per_step(s) * 1e3:.2f} ms per step")
    mean, std = mean_std(np.array(regrets)[:, None])
    private = all(s["privacy"].get("private", False) for s in summaries)
    row = {"mechanism": m.name, "epsilon": eps, "private": private,
           "guarantee": m.guarantee, "each_party_sees": m.sees,
           "regret": float(mean[0]), "regret_std": float(std[0]), "runs": len(regrets),
           "seconds_per_step": float(np.mean([_per_step(s) for s in summaries])),
           "rounds_per_step": float(np.mean([s["rounds_per_step"] for s in summaries])),
           "bytes_per_step": float(np.mean([s["bytes_per_step"] for s in summaries])),
           "lan_seconds_per_step": None, "wan_seconds_per_step": None,
           "processes": len(summaries[0]["parties"]) or 1}
    for net in nets:
        if net == "none" or m.plaintext:  # a reference runs in one process: nothing to delay
            continue
        s = _run(m, task, task.seeds[0], task.timing_steps, eps, net, runs / f"{label}-{net}")
        row[f"{net}_seconds_per_step"] = _per_step(s)
        click.echo(f"  {label} {net}: {_per_step(s) * 1e3:.1f} ms per step "
                   f"({task.timing_steps} steps)")
    return row


def frontier_panels(rows: list[dict], nets: list[str], task: FrontierTask,
                    random: float) -> list[Panel]:
    """Regret against seconds per step, one panel per network, one curve per mechanism; the
    non-private references and a uniformly random arm's regret as levels across each panel."""
    panels = []
    for net in nets:
        key = "seconds_per_step" if net == "none" else f"{net}_seconds_per_step"
        timed = [r for r in rows if r[key] is not None and not MECHANISMS[r["mechanism"]].plaintext]
        xs = [r[key] for r in timed] or [1e-3]
        span = (min(xs) / 2, max(xs) * 2)
        curves = []
        for name in dict.fromkeys(r["mechanism"] for r in timed):
            mine = sorted((r for r in timed if r["mechanism"] == name),
                          key=lambda r: r["epsilon"] or 0)
            label = name + (" (eps " + ", ".join(f"{r['epsilon']:g}" for r in mine) + ")"
                            if mine[0]["epsilon"] is not None else "")
            curves.append(Curve(label, [r[key] for r in mine], [r["regret"] for r in mine],
                                [r["regret_std"] for r in mine]))
        for r in rows:  # the non-private references: a level, not a cost
            if MECHANISMS[r["mechanism"]].plaintext:
                curves.append(Curve(f"{r['mechanism']} (non-private)", span, [r["regret"]] * 2,
                                    dashed=True))
        # what learning nothing costs: a mechanism at or above this line has not learnt
        curves.append(Curve(f"uniformly random arm ({random:.1f})", span, [random] * 2,
                            dashed=True, color="k"))
        panels.append(Panel(f"net {net}", "seconds per step (log)", f"regret after T = "
                            f"{task.steps} steps", curves, logx=True))
    return panels


def random_regret(task: FrontierTask) -> float:
    """A uniformly random arm's expected regret over T steps of the users, mean over seeds: the
    level a mechanism that learns nothing reaches (exact, from the task's means)."""
    means = [task.task(s).means(USERS, task.steps) for s in task.seeds]
    return float(np.mean([np.sum(m.max(axis=1) - m.mean(axis=1)) for m in means]))


def _write(out: Output, rows: list[dict], task: FrontierTask, nets: list[str],
           random: float, refused: dict[str, str]) -> None:
    out.table("frontier", COLUMNS, [[r[c] for c in COLUMNS] for r in rows],
              f"Privacy-cost frontier: {task.described}, T = {task.steps} steps, seeds "
              f"{task.seeds} ({out.machine})",
              note=f"regret: cumulative pseudo-regret of one user stream after T steps, mean and "
                   f"std over seeds (FedUCB: per agent, {task.agents} agents); seconds per step: "
                   f"the slowest party's protocol time / T at net none; lan / wan: the same on "
                   f"the first seed under the emulated network, {task.timing_steps} steps "
                   f"(measured only for the networks of --net: {', '.join(nets)}); bytes: the "
                   "busiest party's sent + received per step. References run in one process. "
                   "SAMBA's data owners hold 0/1 rewards with each arm's mean over users. "
                   + ("The DP mechanisms clip rewards to [-1, 1], the bound their noise is "
                      "calibrated for. " if task.rewards == "gaussian" else "") +
                   f"A uniformly random arm's expected regret on these users: "
                   f"{random:.1f} (the black dashed line of frontier.png). each_party_sees: "
                   "what each party sees of the others' data (not whether the bandit learns)."
                   + "".join(f" Not run on this task: {name} ({why})."
                             for name, why in refused.items()))


@experiment_command("frontier", "the config's [paper] sizes",
                    short_help="Every mechanism on one task: regret against cost")
@click.argument("config", type=ConfigFile())
@click.option("--quick", is_flag=True, help="The config's [task] sizes (the default).")
@click.option("--net", "nets", type=choice_list(*NETS), default="none,lan,wan",
              help="Networks to time each mechanism on (none is always run: regret comes "
                   "from it).")
def frontier(out: Output, paper: bool, config: Path, quick: bool, nets: list[str]) -> None:
    """Every mechanism on one linear contextual bandit: regret against time, rounds and bytes
    per step, on a LAN and a WAN. Writes frontier (.csv, .md, .png)."""
    if quick and paper:
        raise click.UsageError("--quick and --paper exclude each other")
    task, names, epsilons = read_frontier_config(config, paper)
    task = replace(task, folder=out.folder)
    nets = ["none"] + [n for n in nets if n != "none"]
    random = random_regret(task)
    rows: list[dict] = []
    refused = {n: why for n in names if (why := MECHANISMS[n].refuses(task))}
    for name, why in refused.items():
        click.echo(f"  {name}: not run on this task: {why}")
    for name in (n for n in names if n not in refused):
        m = MECHANISMS[name]
        for eps in (epsilons if m.dp else [None]):
            rows.append(_row(m, eps, task, nets, out.folder / "runs"))
            out.written.clear()  # the table is rewritten after each row: name its files once
            _write(out, rows, task, nets, random, refused)  # a later failure keeps rows so far
    out.figure("frontier", frontier_panels(rows, nets, task, random),
               f"Privacy-cost frontier: {task.described}, seeds {task.seeds} ({out.machine})")
