"""The frontier's common tasks as the protocols read them: `data = "linear"` (the seeded linear
task, Bernoulli or Gaussian rewards) or `data = "mnist"` (MNIST as a bandit), each a stream of
action sets (K x d features, their means, a reward a step)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpcbandit.config import spec
from mpcbandit.data.linear_task import REWARDS, LinearTask, linear_task
from mpcbandit.data.mnist_task import ARMS, MnistTask, mnist_task
from mpcbandit.data.tasks import mnist_dir, require_mnist
from mpcbandit.errors import ConfigError

__all__ = ["COMMON", "TaskRewards", "TaskStream", "best_means", "common_task", "mnist_components",
           "prepare_task", "section_task"]

COMMON = ("linear", "mnist")


@dataclass(frozen=True, kw_only=True)
class TaskRewards:
    """The rewards of the linear task, for a protocol section that reads it (`data = "linear"`)."""

    rewards: str = spec("bernoulli", choices=REWARDS,
                        doc="data = linear: bernoulli (0/1 with the linear mean) or gaussian "
                            "(the mean + reward_std N(0, 1))")
    reward_std: float = spec(0.1, min=0.0, doc="data = linear, rewards = gaussian: the noise's "
                                               "standard deviation")

    def check_rewards(self, path: str, data: str) -> None:
        """Gaussian rewards exist for the linear task only (a ConfigError naming the key)."""
        if self.rewards == "gaussian" and data != "linear":
            raise ConfigError(f"{path}.rewards", f"gaussian rewards are the linear task's "
                              f"(data = linear); data = {data} has rewards of its own")

    def check_task(self, path: str, dims: tuple[str, int], arms: tuple[str, int]) -> None:
        """The checks of an action-set section's common task: its rewards and, for MNIST, 10
        arms, 10 D features and the IDX files present ((key, value) of dims and arms)."""
        data = getattr(self, "data")
        self.check_rewards(path, data)
        if data == "mnist":
            mnist_components(dims[1], arms[1], path, dims[0], arms[0])
            require_mnist(f"{path}.data", "data = 'mnist'")


def mnist_components(dims: int, arms: int, path: str, dims_key: str, arms_key: str) -> int:
    """D, the image components of an MNIST action set of `dims` = 10 D features and 10 arms."""
    if arms != ARMS:
        raise ConfigError(f"{path}.{arms_key}", f"the mnist task has {ARMS} arms (digits), "
                          f"got {arms}")
    if dims % ARMS:
        raise ConfigError(f"{path}.{dims_key}", f"an mnist action is z (x) e_a: {dims} features "
                          f"must be 10 x D (D image components)")
    return dims // ARMS


def common_task(kind: str, seed: int, dims: int, arms: int, rewards: str = "bernoulli",
                reward_std: float = 0.1) -> LinearTask | MnistTask:
    """The task `data = kind` names, with action sets of `dims` features over `arms` arms."""
    if kind == "mnist":
        return mnist_task(seed, dims // ARMS, str(mnist_dir()))
    return linear_task(seed, dims, arms, rewards, reward_std)


def section_task(seed: int, s, dims: int, arms: int) -> LinearTask | MnistTask:
    """The common task of a protocol section (its data, rewards and reward_std)."""
    return common_task(s.data, seed, dims, arms, s.rewards, s.reward_std)


def prepare_task(cfg) -> None:
    """Load an MNIST task's components into this process before its roles start (Protocol's
    `prepare`); the linear task is drawn as it is read."""
    if cfg.section.data == "mnist":
        common_task("mnist", cfg.seed, cfg.section.dims, ARMS)


def best_means(task: LinearTask | MnistTask, stream: str, count: int) -> np.ndarray:
    """max_a mu_{t,a} of the first count steps: the contextual oracle's expected rewards."""
    return task.means(stream, count).max(axis=1)


class TaskStream:
    """One user stream of a common task read step by step, with GapEnvironment's interface."""

    def __init__(self, task: LinearTask | MnistTask, stream: str):
        self.task, self.stream, self.t = task, stream, 0
        self._draw = 0.0

    def state(self) -> dict:
        """The next step to read (for a checkpoint)."""
        return {"t": self.t}

    def load_state(self, state: dict) -> None:
        """Continue from a `state()`."""
        self.t = int(state["t"])

    def action_set(self) -> tuple[np.ndarray, np.ndarray]:
        """(this step's K x d features, their means); advances the stream."""
        x, means, self._draw = self.task.step(self.stream, self.t)
        self.t += 1
        return x, means

    def reward(self, mean: float) -> float:
        """The reward of the arm of the last action set with this mean."""
        return float(self.task.reward_of(mean, self._draw))

    def every_reward(self, means: np.ndarray) -> np.ndarray:
        """The reward every arm of the last action set would give (its step's one draw)."""
        return np.asarray(self.task.reward_of(np.asarray(means), self._draw), dtype=np.float64)
