"""Hannun et al. 2019, Algorithm 1: a privacy-preserving epsilon-greedy contextual bandit.

Parties (each its own process):
  feature_holder.0..n-1  own a slice of the D context features each; hold the shares of
                         W_a^{-1}, b_a and compute on them (the paper's set P);
  arm_puller.0           p': learns a_t (opened to it alone), pulls the arm, shares o_t;
  reward_holder.0        p'': holds the reward and shares it;
  dealer.0               correlated randomness, y_t ~ Bernoulli(eps), v ~ Uniform(0,1), the
                         tie-break permutation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpcbandit.bandits.egreedy import draw_exploration, exploration_key, run_eps_greedy
from mpcbandit.config import Config, spec
from mpcbandit.data import BanditData
from mpcbandit.data.tasks import MNIST_TRAIN_SIZE, TASKS, make_task
from mpcbandit.errors import ConfigError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols import PartyContext, Protocol

FEATURE, PULLER, REWARD, DEALER = "feature_holder", "arm_puller", "reward_holder", "dealer"


@dataclass(frozen=True)
class HannunSection:
    """[hannun]: the bandit, its data, the fixed-point/Newton settings and §7's options."""

    feature_holders: int = spec(2, min=2, max=16, doc="parties P_1..P_n holding features (n >= 2)")
    arms: int = spec(10, min=2, max=1000, doc="|A|")
    dims: int = spec(20, min=1, max=784, doc="D, context features in total")
    iterations: int = spec(1000, min=1, max=10_000_000, doc="T")
    epsilon: float = spec(0.1, min=0.0, max=1.0, doc="exploration probability")
    precision_bits: int = spec(20, min=8, max=26, doc="L: fixed-point fractional bits")
    newton_iterations: int = spec(7, min=1, max=30, doc="Newton-Raphson steps of the reciprocal")
    data: str = spec("synthetic", choices=TASKS, doc="synthetic | mnist | kmeans")
    data_dir: str = spec("", doc="MNIST IDX directory (default: $MPCBANDIT_DATA or ../shared/data/mnist)")
    sigma: float = spec(0.5, min=1e-3, doc="kernel width of the kmeans task's rewards")
    reinvert_every: int = spec(0, min=0, doc="§7: recompute W_a^{-1} exactly every k steps (0: off)")
    regularizer: float = spec(0.0, min=0.0, doc="§7: W_a starts at (1 + regularizer) I (0: off)")
    exploration: str = spec("seeded", choices=("seeded", "secret"),
                            doc="seeded: dealer's eps/uniform/permutation stream keyed by the seed "
                                "(reproducible, comparable to --plaintext); secret: os.urandom key")

    def validate(self, path: str) -> None:
        if self.dims < self.feature_holders:
            raise ConfigError(f"{path}.dims", f"{self.dims} features cannot be split over "
                              f"{self.feature_holders} feature holders (each needs at least one)")
        if self.data == "mnist" and self.arms != 10:
            raise ConfigError(f"{path}.arms", f"the mnist task has 10 arms (digits), got {self.arms}")
        if self.data in ("mnist", "kmeans") and self.iterations > MNIST_TRAIN_SIZE:
            raise ConfigError(f"{path}.iterations", f"{self.iterations} exceeds the "
                              f"{MNIST_TRAIN_SIZE} MNIST training images (one sweep)")

    @property
    def eta(self) -> float | None:
        """Theorem 1: eps-greedy is log(|A|/eps)-differentially private (None: eps = 0)."""
        return math.log(self.arms / self.epsilon) if self.epsilon > 0 else None


def roles(s: HannunSection) -> list[tuple[str, int]]:
    return ([(FEATURE, i) for i in range(s.feature_holders)]
            + [(PULLER, 0), (REWARD, 0), (DEALER, 0)])


def feature_slices(s: HannunSection) -> list[np.ndarray]:
    """Which of the D features each feature holder owns (contiguous, near-equal)."""
    return np.array_split(np.arange(s.dims), s.feature_holders)


def task(cfg: Config) -> BanditData:
    """The experiment's data (public simulation: every process derives it from the seed)."""
    s: HannunSection = cfg.section
    try:
        return make_task(s.data, iterations=s.iterations, dims=s.dims, arms=s.arms,
                         seed=cfg.seed, data_dir=s.data_dir, sigma=s.sigma)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError("hannun.data", str(e)) from None


def exploration(cfg: Config):
    """The reproducible exploration samples of the seeded mode, for all T steps."""
    s: HannunSection = cfg.section
    prg = Prg(exploration_key(cfg.seed))
    return draw_exploration(prg, s.iterations, s.arms, s.epsilon, s.precision_bits)


def _outcome(s: HannunSection, data: BanditData, arms: np.ndarray) -> dict:
    t = np.arange(len(arms))
    rewards = data.rewards[t, arms]
    regret = data.expected.max(axis=1) - data.expected[t, arms]
    return {"iterations": len(arms), "arms": arms.tolist(), "rewards": rewards.tolist(),
            "cumulative_reward": float(rewards.sum()), "average_reward": float(rewards.mean()),
            "cumulative_regret": float(regret.sum()), "eta": s.eta}


def plaintext(cfg: Config) -> dict:
    s: HannunSection = cfg.section
    if s.exploration != "seeded":
        raise ConfigError("hannun.exploration", "--plaintext reproduces the 'seeded' exploration "
                          "stream only; a secret dealer key cannot be replayed")
    data = task(cfg)
    res = run_eps_greedy(data.contexts, data.rewards, exploration(cfg),
                         regularizer=s.regularizer, reinvert_every=s.reinvert_every)
    return _outcome(s, data, res.arms)


def run_role(ctx: PartyContext) -> dict:
    raise NotImplementedError("secure Hannun protocol: waiting for the MPC engine (issue 3)")


def summarize(cfg: Config, results: list[dict]) -> dict:
    s: HannunSection = cfg.section
    puller = next(r for r in results if r["role"] == PULLER)
    arms = np.asarray(puller["output"]["arms"], dtype=np.int64)
    out = _outcome(s, task(cfg), arms)
    if s.exploration == "seeded":
        ref = plaintext(cfg)
        out["agreement_with_plaintext"] = float(np.mean(np.asarray(ref["arms"]) == arms))
        out["plaintext_cumulative_reward"] = ref["cumulative_reward"]
    return out


PROTOCOL = Protocol(name="hannun", section=HannunSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize)
