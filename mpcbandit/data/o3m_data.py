"""What O3M's roles read, from the built-in task or from each party's own folder:

- participant p (ap.0 is p = 0, pp.j is p = j): ``features(t)``, its d_p columns of every arm's
  context at step t, shape (K, d_p); its folder holds ``ids.csv`` and ``features.*``: an id
  column and K x d_p columns, arm by arm (arm 0's d_p features, then arm 1's, ...);
- env.0, the users' feedback: ``feedback(t, arm) -> (reward, regret)``; its folder holds
  ``ids.csv`` and either ``rewards.*`` (``reward_0..reward_{K-1}``, optionally
  ``mean_0..mean_{K-1}`` for the regret: every arm's reward at every step) or ``log.*``
  (``arm``, ``reward``: the logged action and its reward, replayed as the Criteo log is: a
  reward only when the chosen arm is the logged one, no regret).
Built in: each participant's own seeded stream (synthetic), its columns of the Criteo log
(read in chunks), or a common task; the environment regenerates the full contexts.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.config import Config
from mpcbandit.crypto.orthogonal_mask import block_offsets
from mpcbandit.data import criteo
from mpcbandit.data.common_task import COMMON, section_task
from mpcbandit.data.folder import BUILTIN, RowsById, load_steps, read_id_list
from mpcbandit.data.linear_task import USERS, LinearTask
from mpcbandit.data.mnist_task import MnistTask
from mpcbandit.data.split import party_dir, step_ids, write_ids, write_table
from mpcbandit.data.tables import Block, TableFile, present
from mpcbandit.data.vertical_synthetic import SyntheticEnvironment, SyntheticParticipant
from mpcbandit.errors import ConfigError, DataError

__all__ = ["participant_stream", "environment", "features", "lookup", "feedback",
           "folder_environment", "split"]


class _CriteoParticipant:
    """Participant p's columns of the Criteo contexts (the log read chunk by chunk)."""

    def __init__(self, catalog: criteo.CriteoCatalog, cols: tuple[int, int]):
        self.replay, self.cols = criteo.CriteoReplay(catalog), cols

    def features(self, t: int) -> np.ndarray:
        a, b = self.cols
        return self.replay.contexts(t)[:, a:b]


class _CriteoEnvironment:
    """Replay of the Criteo log: a click counts only when the arm is the logged item."""

    def __init__(self, catalog: criteo.CriteoCatalog):
        self.replay = criteo.CriteoReplay(catalog)
        self.horizon, self.click_rate = catalog.kept, catalog.click_rate

    def contexts(self, t: int) -> np.ndarray:
        return self.replay.contexts(t)

    def feedback(self, t: int, arm: int) -> tuple[float | None, None]:
        logged, click = self.replay.logged(t)
        if arm != logged:
            return None, None
        return float(click), None


def _criteo_log(cfg: Config) -> criteo.CriteoCatalog:
    s = cfg.section
    try:
        catalog = criteo.scan_criteo(s.data_path or None, arms=s.arms)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError(f"{cfg.protocol}.data_path", str(e)) from None
    if s.iterations > catalog.kept:
        raise ConfigError(f"{cfg.protocol}.iterations", f"{s.iterations} rounds, the Criteo log "
                          f"has {catalog.kept} rows showing one of the {s.arms} arms")
    return catalog


class _TaskParticipant:
    """Participant p's columns of a common task's features (stream "users")."""

    def __init__(self, task: LinearTask | MnistTask, cols: tuple[int, int]):
        self.task, self.cols = task, cols

    def features(self, t: int) -> np.ndarray:
        a, b = self.cols
        return self.task.step(USERS, t)[0][:, a:b]


class _TaskEnvironment:
    """A common task's users: its rewards, pseudo-regret against the best mean."""

    def __init__(self, task: LinearTask | MnistTask):
        self.task, self.horizon = task, None

    def contexts(self, t: int) -> np.ndarray:
        return self.task.step(USERS, t)[0]

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        _, means, draw = self.task.step(USERS, t)
        return float(self.task.reward_of(means[arm], draw)), float(means.max() - means[arm])

    def every_arm(self, t: int) -> tuple[np.ndarray, np.ndarray]:
        """(every arm's reward, every arm's mean) at step t: a full-feedback row."""
        _, means, draw = self.task.step(USERS, t)
        return self.task.reward_of(means, draw), means


def participant_stream(cfg: Config, p: int):
    """Participant p's own features from the built-in task: features(t) -> (K, d_p)."""
    s = cfg.section
    if s.data in COMMON:
        task = section_task(cfg.seed, s, s.dims, s.arms)
        return _TaskParticipant(task, block_offsets(s.partition)[p])
    if s.data == "criteo":
        return _CriteoParticipant(_criteo_log(cfg), block_offsets(s.partition)[p])
    return SyntheticParticipant(cfg.seed, s.partition, s.arms, p)


def environment(cfg: Config):
    """The simulated user stream: contexts(t) -> (K, d), feedback(t, a) -> (reward, regret)."""
    s = cfg.section
    if s.data in COMMON:
        return _TaskEnvironment(section_task(cfg.seed, s, s.dims, s.arms))
    if s.data == "criteo":
        return _CriteoEnvironment(_criteo_log(cfg))
    return SyntheticEnvironment(cfg.seed, s.partition, s.arms, s.noise)


class _Declared:
    """A built-in source, declaring in the hello that it reads the built-in task."""

    agreement = BUILTIN

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


class _FolderParticipant:
    """Participant p's K x d_p features of every step from its own table."""

    def __init__(self, cfg: Config, p: int, folder: Path, party: str,
                 steps: int | None = None):
        s = cfg.section
        self.shape = (s.arms, s.partition[p])
        ids = self.ids = read_id_list(folder, party)
        self.table = load_steps(folder, "features", party, columns=(s.arms * s.partition[p],),
                                steps=s.iterations if steps is None else steps, ids=ids,
                                what=f"o3m.arms = {s.arms} arms x its o3m.partition[{p}] = "
                                     f"{s.partition[p]} features, arm by arm")
        self.agreement = ids.agreement()

    def features(self, t: int) -> np.ndarray:
        return self.table.row(t).reshape(self.shape)


class _FolderFeedback:
    """env.0's feedback table: every arm's reward (rewards.*) or the logged arm (log.*)."""

    def __init__(self, cfg: Config, folder: Path, party: str):
        s = cfg.section
        ids = read_id_list(folder, party)
        self.arms = s.arms
        self.log = present(folder, "log")
        if self.log:
            self.table = load_steps(folder, "log", party, columns=(2,), steps=s.iterations,
                                    ids=ids, what="arm, reward", check=self._check_log)
        else:
            self.table = load_steps(folder, "rewards", party, columns=(s.arms, 2 * s.arms),
                                    steps=s.iterations, ids=ids,
                                    what=f"reward_0..reward_{s.arms - 1}, then optionally "
                                         f"mean_0..mean_{s.arms - 1}: o3m.arms = {s.arms}")
        self.agreement = ids.agreement()

    def _check_log(self, block: Block, table: TableFile) -> None:
        arm = block.values[:, 0]
        bad = np.flatnonzero((arm != np.floor(arm)) | (arm < 0) | (arm >= self.arms))
        if bad.size:
            r = bad[0]
            raise DataError(f"{table.path}: row {block.first + r + 1}, column '{table.names[0]}': "
                            f"{float(arm[r])!r} is not an arm (an integer in 0..{self.arms - 1})")

    def feedback(self, t: int, arm: int) -> tuple[float | None, float | None]:
        row = self.table.row(t)
        if self.log:
            return (float(row[1]), None) if arm == int(row[0]) else (None, None)
        mean = row[self.arms:] if len(row) > self.arms else row[:self.arms]
        return float(row[arm]), float(mean.max() - mean[arm])


def features(cfg: Config, p: int, folder: Path | None, party: str):
    """Participant p's source: features(t) -> (K, d_p)."""
    if folder is None:
        return _Declared(participant_stream(cfg, p))
    return _FolderParticipant(cfg, p, folder, party)


def lookup(cfg: Config, p: int, folder: Path, party: str) -> RowsById:
    """Participant p's K x d_p features (a row, arm by arm) looked up by id in its own folder
    (a service): every row of its table, held in memory."""
    table = _FolderParticipant(cfg, p, folder, party, steps=read_id_list(folder, party).rows)
    return RowsById([table.table.row(t) for t in range(table.ids.rows)], table.ids.ids,
                    table.agreement)


def feedback(cfg: Config, folder: Path | None, party: str):
    """env.0's source: feedback(t, arm) -> (reward or None, regret or None)."""
    return _Declared(environment(cfg)) if folder is None else _FolderFeedback(cfg, folder, party)


class _FolderWhole:
    """Every folder at once (`--plaintext --data`): the full contexts and the feedback."""

    def __init__(self, cfg: Config, data_dir: Path, participants: list[str], env: str):
        self.parts = [_FolderParticipant(cfg, p, data_dir / n, n) for p, n in enumerate(participants)]
        self.env = _FolderFeedback(cfg, data_dir / env, env)

    def contexts(self, t: int) -> np.ndarray:
        return np.concatenate([p.features(t) for p in self.parts], axis=1)

    def feedback(self, t: int, arm: int):
        return self.env.feedback(t, arm)


def folder_environment(cfg: Config, data_dir: Path, participants: list[str], env: str):
    """The whole stream read from every party's folder: one process sees all the data (the
    non-private reference)."""
    return _FolderWhole(cfg, Path(data_dir), participants, env)


def split(cfg: Config, out: Path, suffix: str, participants: list[str], env: str,
          others: list[str]) -> None:
    """Each participant's columns, env.0's rewards and means (or the Criteo log's logged arm
    and click), the id list everywhere; streamed step by step."""
    s = cfg.section
    ids = step_ids(s.iterations)
    for name in [*participants, env, *others]:
        write_ids(party_dir(out, name), ids)
    for p, name in enumerate(participants):
        own = participant_stream(cfg, p)
        write_table(out / name, "features", suffix,
                    [f"a{a}_x{j}" for a in range(s.arms) for j in range(s.partition[p])], ids,
                    (own.features(t) for t in range(s.iterations)))
    world = environment(cfg)
    if s.data == "criteo":
        write_table(out / env, "log", suffix, ["arm", "reward"], ids,
                    (np.array(world.replay.logged(t), dtype=np.float64) for t in range(s.iterations)))
        return
    rows = (np.concatenate(world.every_arm(t)) for t in range(s.iterations))
    write_table(out / env, "rewards", suffix, [f"reward_{a}" for a in range(s.arms)]
                + [f"mean_{a}" for a in range(s.arms)], ids, rows)
