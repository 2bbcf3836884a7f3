"""What Hannun's roles read, from the built-in task or from each party's own folder:

- feature holder i: ``features(t)``, its slice of step t's context (its D_i columns);
  its folder holds ``ids.csv`` and ``features.*`` (an id column and D_i feature columns);
- the environment: ``feedback(t, arm) -> (reward, regret)``, the reward of the arm p' pulled;
  its folder holds ``ids.csv`` and ``rewards.*`` (an id column, ``reward_0..reward_{A-1}`` in
  {0, 1}, then optionally ``mean_0..mean_{A-1}``, each arm's expected reward, for the regret;
  without them the regret is measured against the step's best reward).
The other roles read no data (their folder may hold ``ids.csv``, compared in the hello).

The norm rule (``hannun.norms``): the engine needs ||x_t|| <= 1 for the WHOLE context, which no
holder sees (each slice within 1 is not enough: two slices of norm 0.95 make a context of
1.34, and the fixed point then leaves its range without a word).
- 'auto' (default): the built-in task's contexts are public, so each is checked whole, in the
  clear, and one above 1 is refused naming its step (never scaled: the experiment's numbers
  stay the built-in task's); a holder's own folder is scaled as by 'scale'; a service's
  holder multiplies every slice (posted or looked up, each of norm <= 1) by the fixed
  1/sqrt(n), data-independent, so all its slices are scaled alike and serve-replay does the same.
- 'scale': as 'auto', and the built-in task's slices are scaled too: holder i multiplies its
  slice by min(1, 1 / (sqrt(n) m_i)), m_i its largest row norm, so every slice has norm
  <= 1/sqrt(n) and every context <= 1, whatever the others hold.
- 'promise': the old per-slice rule, for holders that truly promise the joint bound: a row of a
  slice above 1 is refused, nothing is scaled, and the whole context's bound is not checked
  (a warning says so at start; the built-in task is still checked whole).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from mpcbandit.config import Config
from mpcbandit.data import BanditData
from mpcbandit.data.folder import BUILTIN, RowsById, load_steps, read_id_list
from mpcbandit.data.split import party_dir, step_ids, write_ids, write_table
from mpcbandit.data.tables import Block, TableFile
from mpcbandit.data.tasks import make_task, preload
from mpcbandit.errors import ConfigError, DataError

__all__ = ["NORM_RULES", "task", "service_factor", "warn_promise", "check_contexts", "preload_task", "feature_slices", "check_features", "features",
           "lookup", "feedback", "folder_task", "split"]

NORM_RULES = ("auto", "scale", "promise")
_SLACK = 1e-9  # float rounding of a unit-norm row

log = logging.getLogger("mpcbandit.data")


def feature_slices(s) -> list[np.ndarray]:
    """Which of the D features each feature holder owns (contiguous, near-equal)."""
    return np.array_split(np.arange(s.dims), s.feature_holders)


def check_features(x: np.ndarray, party: str) -> np.ndarray:
    """A feature holder's rows, refused if one is not finite or has norm above 1 (the engine's
    range: 1 + x^T W^{-1} x in [1, 2] for the reciprocal's start, |score| by score_bound)."""
    norms = np.linalg.norm(x, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (norms > 1 + _SLACK))
    if bad.size:
        raise DataError(f"{party}: its features at step {bad[0]} have norm {float(norms[bad[0]])!r}; "
                        "Hannun's contexts must have norm <= 1 (each holder's slice, and the "
                        f"whole context across holders); {bad.size} of {len(x)} steps do not")
    return x


def check_contexts(x: np.ndarray, what: str) -> np.ndarray:
    """Whole contexts (T, D), refused naming the first step whose norm is above 1: only where
    the whole context is public (the built-in task), never a holder's private slice."""
    norms = np.linalg.norm(x, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (norms > 1 + _SLACK))
    if bad.size:
        raise DataError(f"{what}: the whole context of step {bad[0]} has norm "
                        f"{float(norms[bad[0]]):.6g} > 1 (all holders' slices together); "
                        f"Hannun's engine needs ||x_t|| <= 1; {bad.size} of {len(x)} steps do "
                        "not (hannun.norms = 'scale' scales each holder's slice instead)")
    return x


def _scale(s, largest: float) -> float:
    """The factor of the 'scale' rule for a slice whose largest row norm is `largest`."""
    if s.norms == "promise" or largest == 0:
        return 1.0
    return min(1.0, 1.0 / (math.sqrt(s.feature_holders) * largest))


def service_factor(s) -> float:
    """What a service's holder multiplies every slice by (each of norm <= 1): 1/sqrt(n), so
    every whole context has norm <= 1 whatever the others post; 1 under 'promise'."""
    return 1.0 if s.norms == "promise" else 1.0 / math.sqrt(s.feature_holders)


def warn_promise(s, party: str) -> None:
    """Say at start that the whole context's bound is the holders' promise, unchecked."""
    if s.norms == "promise":
        log.warning("%s: hannun.norms = 'promise': each slice is refused above norm 1, but the "
                    "WHOLE context's ||x_t|| <= 1 (all %d holders' slices together) is not "
                    "checked: a context above 1 silently breaks the fixed point's range "
                    "(docs/data.md, the norm rule)", party, s.feature_holders)


def _built_in(cfg: Config) -> BanditData:
    s = cfg.section
    try:
        return make_task(s.data, iterations=s.iterations, dims=s.dims, arms=s.arms,
                         seed=cfg.seed, data_dir=s.data_dir, sigma=s.sigma)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError("hannun.data", str(e)) from None


def task(cfg: Config) -> BanditData:
    """The experiment's data (public simulation: every process derives it from the seed), each
    holder's slice scaled by the norm rule as the holder scales its own."""
    s = cfg.section
    data = _built_in(cfg)
    if s.norms != "scale":  # public data: checked whole, so the experiment's numbers stay
        check_contexts(data.contexts, f"hannun.data = {s.data!r}")
        return data
    x = data.contexts.copy()
    for cols in feature_slices(s):
        part = np.ascontiguousarray(x[:, cols])  # the row norms as a holder's table gives them
        x[:, cols] = part * _scale(s, float(np.linalg.norm(part, axis=1).max(initial=0.0)))
    return BanditData(x, data.rewards, data.expected)


def preload_task(cfg: Config) -> None:
    """Read what the experiment's data reads from disk into this process (Protocol.prepare)."""
    s = cfg.section
    preload(s.data, dims=s.dims, arms=s.arms, seed=cfg.seed, data_dir=s.data_dir)


class _TaskFeatures:
    """Holder i's slice of the built-in task."""

    agreement = BUILTIN

    def __init__(self, cfg: Config, index: int, party: str):
        self.x = check_features(task(cfg).contexts[:, feature_slices(cfg.section)[index]], party)

    def features(self, t: int) -> np.ndarray:
        return self.x[t]


class _FolderFeatures:
    """Holder i's slice from its own features table, aligned to the id list."""

    def __init__(self, cfg: Config, index: int, folder: Path, party: str,
                 steps: int | None = None, service: bool = False):
        s = cfg.section
        # a service scales by a fixed factor (service_factor): its rows are checked <= 1 here
        rule, self.service = ("promise" if service else s.norms), service
        self.largest = 0.0
        ids = self.ids = read_id_list(folder, party)
        width = len(feature_slices(s)[index])
        steps = s.iterations if steps is None else steps
        self.table = load_steps(folder, "features", party, columns=(width,), steps=steps,
                                ids=ids, what=f"its {width} of the hannun.dims = {s.dims} "
                                              f"features split over {s.feature_holders} holders",
                                check=lambda b, f: self._check(b, f, rule, party))
        self.factor = 1.0 if service else _scale(s, self.largest)
        self.agreement = ids.agreement()

    def _check(self, block: Block, table: TableFile, rule: str, party: str) -> None:
        norms = np.linalg.norm(block.values, axis=1)
        self.largest = max(self.largest, float(norms.max(initial=0.0)))
        bad = np.flatnonzero(norms > 1 + _SLACK)
        if rule == "promise" and bad.size:
            r = bad[0]
            who = f" (id {block.ids[r]!r})" if block.ids else ""
            raise DataError(f"{party}: {table.path}: row {block.first + r + 1}{who} has norm "
                            f"{norms[r]:.6g} > 1: Hannun's contexts have norm <= 1 ("
                            + ("a service's holder takes slices of norm <= 1 and scales each "
                               "by 1/sqrt(n)" if self.service else
                               "hannun.norms = 'promise'; 'auto' scales each slice of a "
                               "folder to norm <= 1/sqrt(n)") + ")")

    def features(self, t: int) -> np.ndarray:
        row = self.table.row(t)
        return row if self.factor == 1.0 else row * self.factor


class _TaskFeedback:
    """The built-in task's rewards and expected rewards."""

    agreement = BUILTIN

    def __init__(self, cfg: Config):
        self.data = task(cfg)

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        expected = self.data.expected[t]
        return float(self.data.rewards[t, arm]), float(expected.max() - expected[arm])


class _FolderFeedback:
    """The environment's full-feedback table: every arm's reward (and mean) at every step."""

    def __init__(self, cfg: Config, folder: Path, party: str):
        s = cfg.section
        ids = read_id_list(folder, party)
        self.arms = s.arms
        self.table = load_steps(folder, "rewards", party, columns=(s.arms, 2 * s.arms),
                                steps=s.iterations, ids=ids, check=self._check,
                                what=f"reward_0..reward_{s.arms - 1}, then optionally "
                                     f"mean_0..mean_{s.arms - 1}: hannun.arms = {s.arms}")
        self.agreement = ids.agreement()

    def _check(self, block: Block, table: TableFile) -> None:
        rewards = block.values[:, :self.arms]
        bad = np.argwhere((rewards != 0) & (rewards != 1))
        if len(bad):
            r, c = bad[0]
            raise DataError(f"{table.path}: row {block.first + r + 1}, column '{table.names[c]}': "
                            f"reward {float(rewards[r, c])!r}: Hannun's rewards are 0 or 1")

    def expected(self, t: int) -> np.ndarray:
        row = self.table.row(t)
        return row[self.arms:] if len(row) > self.arms else row

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        row, mean = self.table.row(t), self.expected(t)
        return float(row[arm]), float(mean.max() - mean[arm])


def features(cfg: Config, index: int, folder: Path | None, party: str):
    """Feature holder index's source: features(t) -> its D_i values of step t."""
    if folder is not None:   # the built-in task is checked whole whatever the rule
        warn_promise(cfg.section, party)
    return _TaskFeatures(cfg, index, party) if folder is None else _FolderFeatures(cfg, index, folder, party)


def lookup(cfg: Config, index: int, folder: Path, party: str) -> RowsById:
    """Feature holder index's slices looked up by id in its own folder (a service): every row
    of its table, held in memory, each refused above norm 1 and not scaled (whoever uses them
    multiplies them by service_factor, as it does a posted slice)."""
    table = _FolderFeatures(cfg, index, folder, party, steps=read_id_list(folder, party).rows,
                            service=True)
    ids = table.ids
    return RowsById([table.features(t) for t in range(ids.rows)], ids.ids, table.agreement)


def feedback(cfg: Config, folder: Path | None, party: str):
    """The environment's source: feedback(t, arm) -> (reward, regret)."""
    return _TaskFeedback(cfg) if folder is None else _FolderFeedback(cfg, folder, party)


def folder_task(cfg: Config, data_dir: Path, holders: list[str], env: str) -> BanditData:
    """The whole task read from every party's folder (`--plaintext --data`: one process
    reads all the data, the non-private reference)."""
    s = cfg.section
    parts = [_FolderFeatures(cfg, i, data_dir / p, p) for i, p in enumerate(holders)]
    x = np.array([np.concatenate([p.features(t) for p in parts]) for t in range(s.iterations)])
    fb = _FolderFeedback(cfg, data_dir / env, env)
    rewards = np.array([fb.table.row(t)[:s.arms] for t in range(s.iterations)])
    expected = np.array([fb.expected(t) for t in range(s.iterations)])
    return BanditData(x, rewards, expected)


def split(cfg: Config, out: Path, suffix: str, holders: list[str], env: str,
          others: list[str]) -> None:
    """Each holder's columns, the environment's rewards and means, the id list everywhere."""
    s = cfg.section
    data = _built_in(cfg)  # as the organisations hold it: each holder applies the norm rule
    ids = step_ids(s.iterations)
    for name in [*holders, env, *others]:
        write_ids(party_dir(out, name), ids)
    for name, cols in zip(holders, feature_slices(s)):
        write_table(out / name, "features", suffix, [f"x{c}" for c in cols], ids,
                    data.contexts[:, cols])
    names = [f"reward_{a}" for a in range(s.arms)] + [f"mean_{a}" for a in range(s.arms)]
    write_table(out / env, "rewards", suffix, names, ids,
                np.concatenate([data.rewards, data.expected], axis=1))
