"""What the differentially private linear bandits' users give, from the built-in task or a
party's own folder: FedUCB's agent i serves its own users, JDP's env.0 the server's users.

The source: ``action_set(t)``, round t's K actions (K x d, t from 0), then ``feedback(t, arm)
-> (reward, regret)``; ``state()`` / ``load_state()`` for a checkpoint. The folder holds
``rounds.*``: an id column, one row a round in file order (ids unique), K x d action features
arm by arm (``a0_x0 .. a{K-1}_x{d-1}``), every action's reward ``reward_0..reward_{K-1}`` and
optionally each one's expected reward ``mean_0..mean_{K-1}`` (for the regret; without them it is
measured against the round's best reward). The privacy proof's bounds are checked: every
action's norm and every |reward| and |mean| at most 1 (L = B = 1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.config import Config
from mpcbandit.data.common_task import COMMON, TaskStream, section_task
from mpcbandit.data.folder import BUILTIN, load_steps
from mpcbandit.data.split import party_dir, step_ids, write_table
from mpcbandit.data.tables import Block, TableFile
from mpcbandit.errors import DataError

__all__ = ["user_stream", "users", "split"]

_SLACK = 1e-9  # float rounding of a unit-norm action


def user_stream(seed: int, s, stream: str) -> GapEnvironment | TaskStream:
    """One stream of users and their action sets: Dubey & Pentland's gap environment, or a
    common task of the frontier (`data = "linear"` or `"mnist"`)."""
    if s.data in COMMON:
        return TaskStream(section_task(seed, s, s.dims, s.actions), stream)
    gap = {"gap": s.gap} if hasattr(s, "gap") else {}  # [feducb] has none: the environment's own
    return GapEnvironment(seed, s.dims, s.actions, stream, **gap)


class _Simulated:
    """The built-in users: the stream's next action set, then the chosen action's reward."""

    agreement = BUILTIN

    def __init__(self, env: GapEnvironment | TaskStream):
        self.env, self.means = env, None

    def state(self) -> dict:
        return self.env.state()

    def load_state(self, state: dict) -> None:
        self.env.load_state(state)

    def action_set(self, t: int) -> np.ndarray:
        x, self.means = self.env.action_set()
        return x

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        return self.env.reward(self.means[arm]), float(self.means.max() - self.means[arm])


class _Rounds:
    """The users of a party's own rounds table."""

    agreement: dict = {}

    def __init__(self, cfg: Config, folder: Path, party: str, horizon_key: str):
        s = cfg.section
        self.k, self.d = s.actions, s.dims
        width = self.k * self.d
        self.table = load_steps(folder, "rounds", party, columns=(width + self.k, width + 2 * self.k),
                                steps=s.horizon, check=self._check,
                                what=f"{self.k} x {self.d} action features, {self.k} rewards, "
                                     f"optionally {self.k} means ({horizon_key}: one row a round)")

    def _check(self, block: Block, table: TableFile) -> None:
        width = self.k * self.d
        x = block.values[:, :width].reshape(len(block.values), self.k, self.d)
        norms = np.linalg.norm(x, axis=2)
        if (norms > 1 + _SLACK).any():
            r, a = np.argwhere(norms > 1 + _SLACK)[0]
            raise DataError(f"{table.path}: row {block.first + r + 1}, action {a} (columns "
                            f"'{table.names[a * self.d]}'..): norm {norms[r, a]:.6g} > 1, the "
                            "privacy proof's bound L = 1")
        rest = block.values[:, width:]
        if (np.abs(rest) > 1).any():
            r, c = np.argwhere(np.abs(rest) > 1)[0]
            raise DataError(f"{table.path}: row {block.first + r + 1}, column "
                            f"'{table.names[width + c]}': {float(rest[r, c])!r} is outside [-1, 1], "
                            "the privacy proof's bound B = 1")

    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass

    def action_set(self, t: int) -> np.ndarray:
        return self.table.row(t)[:self.k * self.d].reshape(self.k, self.d)

    def feedback(self, t: int, arm: int) -> tuple[float, float]:
        row = self.table.row(t)[self.k * self.d:]
        mean = row[self.k:] if len(row) > self.k else row
        return float(row[arm]), float(mean.max() - mean[arm])


def users(cfg: Config, stream: str, folder: Path | None, party: str, horizon_key: str):
    """A party's users: its own folder's rounds, or the built-in stream `stream`."""
    if folder is None:
        return _Simulated(user_stream(cfg.seed, cfg.section, stream))
    return _Rounds(cfg, folder, party, horizon_key)


def split(cfg: Config, out: Path, suffix: str, streams: dict[str, str]) -> None:
    """Each party's rounds ({party name: its built-in stream}), with every action's reward and
    mean: the reward every action would have given, with the round's one draw."""
    s = cfg.section
    ids = step_ids(s.horizon)
    names = ([f"a{a}_x{j}" for a in range(s.actions) for j in range(s.dims)]
             + [f"reward_{a}" for a in range(s.actions)] + [f"mean_{a}" for a in range(s.actions)])
    for name, stream in streams.items():
        env = user_stream(cfg.seed, s, stream)

        def rows(env=env):
            for _ in range(s.horizon):
                x, means = env.action_set()
                yield np.concatenate([x.ravel(), env.every_reward(means), means])
        write_table(party_dir(out, name), "rounds", suffix, names, ids, rows())
