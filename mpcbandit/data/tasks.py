"""The bandit tasks Hannun's protocol reads, as BanditData: the three of Hannun et al. §5 (MNIST
digits, 10 arms, reward 1 for the true digit; K-means arms with Gaussian-kernel Bernoulli
rewards; a synthetic stand-in for MNIST that needs no download) and the frontier's common linear
task (`linear`: the K arms' features side by side, / sqrt K, as one context of D = K x d)."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

import numpy as np

from mpcbandit.data import BanditData, data_root
from mpcbandit.data.kmeans import kernel_probabilities, kmeans
from mpcbandit.data.linear_task import USERS, linear_task
from mpcbandit.data.mnist import cached_features, mnist_present
from mpcbandit.data.mnist_task import user_order
from mpcbandit.data.synthetic import synthetic_classes
from mpcbandit.errors import ConfigError, DataError
from mpcbandit.protocols import seeded_rng

__all__ = ["TASKS", "linear_arm_dims", "make_task", "mnist_dir", "preload", "require_mnist",
           "MNIST_TRAIN_SIZE"]

TASKS = ("synthetic", "mnist", "kmeans", "linear")
MNIST_TRAIN_SIZE = 60_000


def mnist_dir(data_dir: str | Path = "") -> Path:
    """Directory holding the MNIST IDX files: data_dir if given, else <data>/mnist."""
    return Path(data_dir) if str(data_dir) else data_root() / "mnist"


def require_mnist(key: str, what: str, data_dir: str | Path = "") -> None:
    """A ConfigError naming `key` unless the MNIST IDX files are in mnist_dir(data_dir); a key
    that is itself a directory setting (`*.data_dir`) is named as a remedy too."""
    where = mnist_dir(data_dir)
    try:
        present = mnist_present(where)
    except DataError as e:
        raise ConfigError(key, f"{what} needs the MNIST IDX files: {e}") from None
    if not present:
        remedy = f"{key} or $MPCBANDIT_DATA" if key.endswith(".data_dir") else "$MPCBANDIT_DATA"
        raise ConfigError(key, f"{what} needs the MNIST IDX files, not found in {where} "
                               f"(set {remedy})")


def preload(kind: str, *, dims: int, arms: int, seed: int, data_dir: str | Path = "") -> None:
    """Read what task `kind` reads from disk into this process's caches (MNIST's components,
    the k-means centres); the generated tasks read nothing."""
    if kind in ("mnist", "kmeans"):
        cached_features(str(mnist_dir(data_dir)), dims, "train")
    if kind == "kmeans":
        _centres(str(mnist_dir(data_dir)), dims, arms, seed)


_CENTRES = threading.RLock()  # in-process runs: parties in threads share one computation


@functools.lru_cache(maxsize=4)
def _centres_cached(directory: str, dims: int, arms: int, seed: int) -> np.ndarray:
    train, _ = cached_features(directory, dims, "train")
    return kmeans(train, arms, seeded_rng(seed, "hannun/kmeans"))


def _centres(directory: str, dims: int, arms: int, seed: int) -> np.ndarray:
    with _CENTRES:
        return _centres_cached(directory, dims, arms, seed)


def _one_hot(labels: np.ndarray, arms: int) -> np.ndarray:
    return np.eye(arms)[labels]


def linear_arm_dims(dims: int, arms: int, key: str = "hannun.dims") -> int:
    """d, the features per arm, of a `linear` context of D = dims (the arms side by side); a
    ConfigError naming `key` if dims is not |A| x d with d >= 2."""
    if dims % arms or dims // arms < 2:
        raise ConfigError(key, f"the linear task lays the {arms} arms' features side by side: "
                               f"D = {dims} must be |A| x d with d >= 2")
    return dims // arms


def make_task(kind: str, *, iterations: int, dims: int, arms: int, seed: int,
              data_dir: str | Path = "", sigma: float = 0.5, split: str = "train") -> BanditData:
    """T = iterations steps of task kind, reproducible from seed."""
    if kind == "synthetic":
        x, labels = synthetic_classes(iterations, dims, arms, seeded_rng(seed, "hannun/synthetic"))
        rewards = _one_hot(labels, arms)
        return BanditData(x, rewards, rewards)
    if kind == "linear":
        task = linear_task(seed, linear_arm_dims(dims, arms), arms)  # 0/1 rewards: Hannun's
        x, means, drawn = task.steps(USERS, iterations)
        # / sqrt |A|: Hannun's contexts have norm <= 1 (the model stays exact, theta_a scaled)
        return BanditData(x.reshape(iterations, dims) / np.sqrt(arms), drawn, means)
    if kind not in ("mnist", "kmeans"):
        raise ValueError(f"unknown task {kind!r} (one of {', '.join(TASKS)})")
    x, labels = cached_features(str(mnist_dir(data_dir)), dims, split)
    if iterations > x.shape[0]:
        raise ValueError(f"{iterations} iterations but MNIST {split} has {x.shape[0]} images")
    order = user_order(seed, USERS, x.shape[0], split)[:iterations]  # the frontier's "users"
    if kind == "mnist":
        if arms != 10:
            raise ValueError(f"the MNIST task has 10 arms (digits), got {arms}")
        rewards = _one_hot(labels[order], 10)
        return BanditData(x[order], rewards, rewards)
    centres = _centres(str(mnist_dir(data_dir)), dims, arms, seed)
    nu = kernel_probabilities(x[order], centres, sigma)
    draws = seeded_rng(seed, f"hannun/bernoulli/{split}").random(nu.shape)
    return BanditData(x[order], (draws < nu).astype(np.float64), nu)
