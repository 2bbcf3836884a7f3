"""Comp follows arms across SAMBA steps and reads off rewards, a limit of Ciucanu et al.'s
design: `mpcbandit bench samba-comp-tracking`.

Comp sees, each step, the K masked scores in a fresh random order: α_t·v_i, or v_i + log α_t
for log-domain scores. The common mask only rescales (or shifts), and from one step to the next
only the pulled arm's score changes for algorithms whose score is the empirical mean. So Comp
finds the one transform that maps K − 1 of last step's values onto this step's, and the one
value left over is the arm it pulled last step, with its new score: up means the reward was 1,
down means 0. Nothing but Comp's own view is used.
"""

from __future__ import annotations

import click

from mpcbandit.bandits.mab import ALGORITHMS, make_algorithm
from mpcbandit.experiments.common import Output, choice_list, experiment_command, shipped_config
from mpcbandit.protocols.samba.protocol import run_inproc_samba

__all__ = ["bench", "infer_reward", "measure", "track"]

#: relative difference under which two masked values are the same score (floats carry ~1e-16)
MATCH_TOL = 1e-9


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= MATCH_TOL * max(abs(a), abs(b), 1e-300)


def _matches(prev: list[float], cur: list[float], f) -> tuple[int, list[int], list[int]]:
    """How many of prev map onto distinct entries of cur under f; the unmatched of each."""
    free = list(range(len(cur)))
    left = []
    for i, x in enumerate(prev):
        y = f(x)
        hit = next((j for j in free if _same(y, cur[j])), None)
        if hit is None:
            left.append(i)
        else:
            free.remove(hit)
    return len(prev) - len(left), left, free


def infer_reward(prev: list[float], pulled: int, cur: list[float], log_scores: bool) -> int | None:
    """Comp's guess of last step's reward from two consecutive views, or None (cannot tell)."""
    if len(set(prev)) == 1 or len(set(cur)) == 1:
        return None  # an exploration step (no scores) or all scores equal: nothing to follow
    anchors = [i for i in range(len(prev)) if i != pulled][:2]  # one of them is unchanged
    best = (0, None, [], [])
    for i in anchors:
        for y in cur:
            if log_scores:
                shift = y - prev[i]
                f = (lambda x, s=shift: x + s)
                back = (lambda x, s=shift: x - s)
            else:
                if prev[i] == 0 or y == 0:
                    continue
                scale = y / prev[i]
                f = (lambda x, c=scale: x * c)
                back = (lambda x, c=scale: x / c)
            n, left, free = _matches(prev, cur, f)
            if n > best[0]:
                best = (n, back, left, free)
    n, back, left, free = best
    if n == len(prev) - 1 and left == [pulled]:
        return 1 if back(cur[free[0]]) > prev[pulled] else 0
    return None


def track(view: list, rewards: list[int], log_scores: bool) -> dict:
    """Run the attack over Comp's view (t, l, values, pos) of one run; counts against truth."""
    first = {t: (values, pos) for t, l, values, pos in view if l == 1}
    read = right = ones = 0
    for t in sorted(first):
        if t + 1 not in first:
            continue
        (prev, pos), (cur, _) = first[t], first[t + 1]
        guess = infer_reward(prev, pos, cur, log_scores)
        if guess is None:
            continue
        truth = rewards[t - 1]  # rewards[t - 1] is step t's
        read += 1
        right += guess == truth
        ones += truth
    chance = max(ones, read - ones) / read if read else 0.0
    return {"pairs": len(first) - 1, "read": read, "right": right,
            "accuracy": right / read if read else 0.0, "chance": chance}


def measure(algorithm: str, budget: int, arms: int, seed: int = 1) -> dict:
    """One in-process SAMBA run on synthetic arms, the attack on Comp's recorded view."""
    cfg = shipped_config("samba-synthetic.toml",
                         [f'samba.algorithm="{algorithm}"', f"samba.budget={budget}",
                          f"samba.arms={arms}", f"seed={seed}",
                          # key size changes nothing Comp sees; small keys keep the run short
                          "samba.paillier_bits=256", "samba.insecure_small_keys=true",
                          # the same reading works on fresh seeds; derived ones repeat at --seed
                          "samba.fresh_seeds=false"])
    view: list = []
    out = run_inproc_samba(cfg, comp_view=view)
    alg = make_algorithm(algorithm, **cfg.section.params)
    return {"algorithm": algorithm, **track(view, out["series"]["rewards"], alg.log_scores)}


COLUMNS = ["algorithm", "pairs", "read", "right", "accuracy", "chance"]


@experiment_command("samba-comp-tracking", "the same as the defaults (an attack on the paper's "
                                           "design; it has no size of its own)",
                    short_help="Rewards SAMBA's Comp reads by following arms")
@click.option("--budget", type=click.IntRange(min=10), default=3000, help="Steps N per run.")
@click.option("--arms", type=click.IntRange(min=3), default=5, help="Arms K.")
@click.option("--seed", type=int, default=1, help="The config's seed.")
@click.option("--algorithms", type=choice_list(*sorted(ALGORITHMS)),
              default=",".join(sorted(ALGORITHMS)), help="Algorithms attacked.")
def bench(out: Output, paper: bool, budget: int, arms: int, seed: int,
          algorithms: list[str]) -> None:
    """Comp, curious, with nothing but its own view: the rewards it reads off by following
    arms across SAMBA steps (docs/samba.md). Per algorithm, one run in one process on synthetic
    arms: the pairs of consecutive steps, how many Comp could read (both exploit steps), how
    many rewards it got right, and the best constant guess on the same steps (chance). Writes
    samba_comp_tracking (.csv, .md).
    """
    rows = []
    click.echo(f"{'algorithm':>18} | {'pairs':>6} {'read':>6} {'right':>6} | "
               f"{'accuracy':>8} {'chance':>7}")
    for name in algorithms:
        r = measure(name, budget, arms, seed)
        rates = ([round(r["accuracy"], 4), round(r["chance"], 4)] if r["read"]
                 else [None, None])  # nothing read: no rate to state
        rows.append([name, r["pairs"], r["read"], r["right"], *rates])
        shown = (f"{r['accuracy']:>8.3f} {r['chance']:>7.3f}" if r["read"]
                 else f"{'-':>8} {'-':>7}")
        click.echo(f"{name:>18} | {r['pairs']:>6} {r['read']:>6} {r['right']:>6} | {shown}")
    out.table("samba_comp_tracking", COLUMNS, rows,
              f"Comp's reading of the reward of each exploit step followed by an exploit step "
              f"(K = {arms}, N = {budget}, seed {seed})")
