"""What the demo's input holders sum: input holder i's vector of each iteration, ``inputs(t)``
(`demo.length` integers mod 2^64, t from 0). Built in: drawn from the config seed. From its own
folder: ``inputs.*``, an id column and `demo.length` columns of integers in [0, 2^64), one row
an iteration in file order."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.config import Config
from mpcbandit.data.folder import BUILTIN, load_steps
from mpcbandit.data.split import party_dir, step_ids, write_table
from mpcbandit.protocols import seeded_rng

__all__ = ["input_vector", "inputs", "split"]


def input_vector(seed: int, index: int, length: int, iteration: int = 0) -> np.ndarray:
    """Input holder index's private vector at an iteration (reproducible, for checking)."""
    rng = seeded_rng(seed, f"demo/input/{index}/{iteration}")
    return rng.integers(0, 2**64, size=length, dtype=np.uint64)


class _Seeded:
    agreement = BUILTIN

    def __init__(self, cfg: Config, index: int):
        self.seed, self.index, self.length = cfg.seed, index, cfg.section.length

    def inputs(self, t: int) -> np.ndarray:
        return input_vector(self.seed, self.index, self.length, t)


class _Folder:
    agreement: dict = {}

    def __init__(self, cfg: Config, folder: Path, party: str):
        s = cfg.section
        self.table = load_steps(folder, "inputs", party, columns=(s.length,), kind="uint64",
                                steps=s.iterations, what=f"demo.length = {s.length} integers")

    def inputs(self, t: int) -> np.ndarray:
        return np.array(self.table.row(t), dtype=np.uint64)


def inputs(cfg: Config, index: int, folder: Path | None, party: str):
    """Input holder index's source: inputs(t) -> its vector of iteration t."""
    return _Seeded(cfg, index) if folder is None else _Folder(cfg, folder, party)


def split(cfg: Config, out: Path, suffix: str, holders: list[str]) -> None:
    """Each input holder's vectors, one row an iteration."""
    s = cfg.section
    for i, name in enumerate(holders):
        write_table(party_dir(out, name), "inputs", suffix, [f"v{j}" for j in range(s.length)],
                    step_ids(s.iterations), (input_vector(cfg.seed, i, s.length, t)
                                             for t in range(s.iterations)), kind="uint64")
