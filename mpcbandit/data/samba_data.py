"""What SAMBA's data owners read: data owner i its own arm, ``reward(t, n)``, the reward of its
n-th pull (at step t). From its own folder:
- ``outcomes.*``: an id column and ``reward`` (0 or 1), the arm's outcomes in pull order: row n
  is the reward of the n-th pull (n = 1 is the pull every arm gets first); a run that pulls the
  arm more often than the table has rows stops with a DataError naming it;
- or ``mean.*``: an id column and ``mean`` in [0, 1], one row: a simulated Bernoulli arm whose
  rewards the owner draws from its own pull stream (fresh, or from the config seed when
  ``samba.fresh_seeds = false``), as the built-in arm of the arm file or synthetic means does.
The other roles read no data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.bandits.mab import pull
from mpcbandit.config import Config
from mpcbandit.data.folder import load_steps
from mpcbandit.data.split import party_dir, write_table
from mpcbandit.data.tables import Block, TableFile, present
from mpcbandit.errors import ConfigError, DataError
from mpcbandit.protocols.samba.streams import pull_stream

__all__ = ["arm_means", "owner", "split"]


def arm_means(s, seed: int, key: str = "samba.data") -> list[float]:
    """The K Bernoulli means, largest first: synthetic, or the top K of an arm file."""
    from mpcbandit.data import resolve_data_path
    from mpcbandit.data.samba import read_arm_file, synthetic_means, top_means

    if s.data == "synthetic":
        return synthetic_means(seed, s.arms).tolist()
    path = resolve_data_path(s.data, key)
    try:
        return top_means(read_arm_file(path), s.arms).tolist()
    except ValueError as e:
        raise ConfigError(key, str(e)) from None


class SimulatedArm:
    """A Bernoulli arm of this mean, its rewards drawn from the owner's pull stream."""

    agreement: dict = {}

    def __init__(self, mean: float, seed: bytes):
        self.mean = mean
        self.load_state({"pull": seed})

    def state(self) -> dict:
        """The pull stream's seed (a checkpoint's)."""
        return {"pull": self.seed}

    def load_state(self, state: dict) -> None:
        self.seed = state["pull"]
        self.pulls = pull_stream(self.seed)

    def reward(self, t: int, n: int) -> int:
        """1 iff step t's uniform of the pull stream is below the mean."""
        return pull(self.mean, self.pulls.row(t))


class RecordedArm:
    """An arm's recorded outcomes, one per pull, in pull order."""

    agreement: dict = {}

    def __init__(self, folder: Path, party: str):
        self.party = party
        self.table = load_steps(folder, "outcomes", party, columns=(1,), steps=1, what="reward",
                                check=_in_range((0.0, 1.0), "a reward, 0 or 1", exact=True))

    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass

    def reward(self, t: int, n: int) -> int:
        if n > self.table.rows:
            raise DataError(f"{self.party}: {self.table.table.path} holds {self.table.rows} "
                            f"outcomes; the run pulls this arm a {n}th time (step {t})")
        return int(self.table.row(n - 1)[0])


def _in_range(bounds: tuple[float, float], what: str, exact: bool = False):
    lo, hi = bounds

    def check(block: Block, table: TableFile) -> None:
        v = block.values[:, 0]
        wrong = (v < lo) | (v > hi)
        if exact:
            wrong |= (v != lo) & (v != hi)
        bad = np.flatnonzero(wrong)
        if bad.size:
            r = bad[0]
            raise DataError(f"{table.path}: row {block.first + r + 1}, column '{table.names[0]}': "
                            f"{float(v[r])!r} is not {what}")
    return check


def owner(cfg: Config, index: int, folder: Path | None, party: str, pull_seed: bytes):
    """Data owner index's arm: reward(t, n) -> 0 or 1 (state() / load_state() for checkpoints)."""
    if folder is None:
        return SimulatedArm(arm_means(cfg.section, cfg.seed)[index], pull_seed)
    if present(folder, "outcomes"):
        return RecordedArm(folder, party)
    mean = load_steps(folder, "mean", party, columns=(1,), steps=1, what="mean",
                      check=_in_range((0.0, 1.0), "a mean in [0, 1]"))
    return SimulatedArm(float(mean.row(0)[0]), pull_seed)


def split(cfg: Config, out: Path, suffix: str, owners: list[str]) -> None:
    """Each data owner's mean (its row of the arm file, or the synthetic means)."""
    for name, mean in zip(owners, arm_means(cfg.section, cfg.seed)):
        write_table(party_dir(out, name), "mean", suffix, ["mean"], [name], np.array([[mean]]))
