"""The mechanisms of `mpcbandit frontier`: how each consumes the common linear task, what it
guarantees, and what each party sees.

Each mechanism is a shipped config plus the overrides that put the common task (d features per
arm, K arms, T steps, M holders) into its own shape, so every row is a real run of the same
launcher as `mpcbandit run`. The guarantee and "sees" texts summarise docs/threat-model.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from mpcbandit.data.common_task import best_means, common_task
from mpcbandit.data.linear_task import USERS, LinearTask
from mpcbandit.data.mnist_task import ARMS, MnistTask
from mpcbandit.data.samba import top_means, write_arm_file

__all__ = ["FrontierTask", "Mechanism", "MECHANISMS", "split"]


@dataclass(frozen=True)
class FrontierTask:
    """The common task: its kind and rewards; d features per arm (linear) or D image components
    (mnist), K arms, T steps, M holders, FedUCB agents."""

    dims: int
    arms: int
    steps: int
    seeds: list[int]
    holders: int
    agents: int
    timing_steps: int
    kind: str = "linear"          # linear | mnist
    rewards: str = "bernoulli"    # the linear task's: bernoulli | gaussian
    reward_std: float = 0.1
    folder: Path = Path(".")  # where a mechanism may write an input file (SAMBA's arm file)

    @property
    def described(self) -> str:
        """The task in words, for titles."""
        if self.kind == "mnist":
            return (f"MNIST as a bandit, D = {self.dims} image components ({self.action_dims} "
                    f"features per action), K = {self.arms}")
        rewards = ("Bernoulli" if self.rewards == "bernoulli" else
                   f"Gaussian (std {self.reward_std:g})")
        return f"linear task, d = {self.dims} features per arm, K = {self.arms}, {rewards} rewards"

    @property
    def action_dims(self) -> int:
        """The features of one arm as an action set shows it (mnist: z (x) e_a, 10 D)."""
        return self.dims * ARMS if self.kind == "mnist" else self.dims

    def task(self, seed: int) -> LinearTask | MnistTask:
        """The task every mechanism reads at this seed."""
        return common_task(self.kind, seed, self.action_dims, self.arms, self.rewards,
                           self.reward_std)

    def data_sets(self, section: str) -> list[str]:
        """A section's overrides naming this task and its rewards."""
        return [f"{section}.data={self.kind!r}", f"{section}.rewards={self.rewards!r}",
                f"{section}.reward_std={self.reward_std}"]


def split(d: int, m: int) -> list[int]:
    """d columns over m holders, as evenly as possible, the first ones one wider."""
    return [d // m + (i < d % m) for i in range(m)]


@dataclass(frozen=True)
class Mechanism:
    """One row family of the frontier: a config, its overrides for the task, its promises."""

    name: str
    config: str
    guarantee: str
    sees: str  # what each party sees of the others' data (the each_party_sees column)
    overrides: Callable[[FrontierTask, int, int, float | None], list[str]]  # task, seed, T, eps
    dp: bool = False           # one row per epsilon
    plaintext: bool = False    # a non-private reference, run in one process
    regret: Callable[[dict, FrontierTask, int], float] | None = None  # default: the summary's
    refuses: Callable[[FrontierTask], str | None] = lambda t: None  # why it cannot run a task

    def run_regret(self, summary: dict, task: FrontierTask, seed: int) -> float:
        """Cumulative pseudo-regret of one user stream over the run's T steps."""
        if self.regret is not None:
            return self.regret(summary, task, seed)
        return float(summary["cumulative_regret"])


def _hannun(t: FrontierTask, seed: int, steps: int, eps: float | None) -> list[str]:
    # linear: the K arms' features side by side; mnist: Hannun's own setting, z itself
    dims = t.dims if t.kind == "mnist" else t.arms * t.dims
    return [f"hannun.data={t.kind!r}", f"hannun.arms={t.arms}", f"hannun.dims={dims}",
            f"hannun.feature_holders={t.holders}", f"hannun.iterations={steps}"]


def _hannun_refuses(t: FrontierTask) -> str | None:
    if t.rewards == "gaussian":
        return "Hannun's protocol takes 0/1 rewards (its b_a updates are exact integers)"
    return None


def _o3m(algorithm: str):
    def sets(t: FrontierTask, seed: int, steps: int, eps: float | None) -> list[str]:
        # each participant holds some of the d (linear) or D (mnist: x 10 columns) components
        width = t.action_dims // t.dims
        partition = [width * n for n in split(t.dims, t.holders)]
        return t.data_sets("o3m") + [
            f"o3m.participants={t.holders}", f"o3m.partition={partition}", f"o3m.arms={t.arms}",
            f"o3m.iterations={steps}", f"o3m.algorithm={algorithm!r}", "o3m.baseline='central'"]
    return sets


def _jdp(noise: str):
    def sets(t: FrontierTask, seed: int, steps: int, eps: float | None) -> list[str]:
        return t.data_sets("jdp") + [f"jdp.dims={t.action_dims}", f"jdp.actions={t.arms}",
                                     f"jdp.horizon={steps}", f"jdp.epsilon={eps}",
                                     f"jdp.noise={noise!r}"]
    return sets


def _feducb(beta: str | float):
    def sets(t: FrontierTask, seed: int, steps: int, eps: float | None) -> list[str]:
        # a fixed schedule: the threshold rule's sync bit is outside the paper's privacy proof
        return t.data_sets("feducb") + [
            f"feducb.agents={t.agents}", f"feducb.dims={t.action_dims}",
            f"feducb.actions={t.arms}", f"feducb.horizon={steps}", f"feducb.epsilon={eps}",
            "feducb.schedule='mlogt'", f"feducb.beta={beta!r}"]
    return sets


def samba_arm_file(t: FrontierTask, seed: int) -> Path:
    """The task's arms as SAMBA sees them: each arm's mean reward over users, in an arm file
    (its data owners hold 0/1 rewards drawn with these means, whatever the task's rewards)."""
    path = t.folder / f"samba-arms-seed{seed}.txt"
    write_arm_file(path, t.task(seed).arm_means())
    return path


def _samba(t: FrontierTask, seed: int, steps: int, eps: float | None) -> list[str]:
    return [f"samba.data={str(samba_arm_file(t, seed))!r}", f"samba.arms={t.arms}",
            f"samba.budget={steps}", "samba.algorithm='ucb'", "samba.fresh_seeds=true"]


def feducb_regret_per_agent(summary: dict, t: FrontierTask, seed: int) -> float:
    """FedUCB's group regret over its agents: each agent serves its own users for T steps."""
    return float(summary["cumulative_regret"]) / t.agents


def samba_contextual_regret(summary: dict, t: FrontierTask, seed: int) -> float:
    """SAMBA's pulls against the contextual oracle: sum_t max_a mu_{t,a} - mean of its arm.

    SAMBA's arm i is the i-th largest arm mean (its arm file is read largest first); the users
    at step t are the task's users at step t, so this is the regret every other row reports.
    """
    task = t.task(seed)
    means = top_means(task.arm_means(), t.arms)
    arms = np.asarray(summary["series"]["arms"], dtype=np.int64)
    return float(best_means(task, USERS, len(arms)).sum() - means[arms].sum())


_MPC_SEES = "p': the arm; p'': the reward; feature holders: their own columns only"
_O3M = ("masking, no formal guarantee; trusts the mask generator not to collude with the AP",
        "AP: every holder's Gram matrix, norms and subspace (measured leak), the arm")
_JDP = ("(epsilon, delta) joint DP, statistical; trusts the privatizer with raw data",
        "learner: noisy statistics; privatizer: every user's (x, y)")
_FEDUCB_SEES = "controller and other agents: noisy sums at fixed sync rounds"
MECHANISMS: dict[str, Mechanism] = {m.name: m for m in [
    Mechanism("hannun", "hannun-synthetic.toml",
              "computational (secret shares over Z/2^64, semi-honest); trusts the dealer, "
              "holders not all colluding", _MPC_SEES, _hannun, refuses=_hannun_refuses),
    Mechanism("o3m-linucb", "o3m-synthetic.toml", *_O3M, _o3m("linucb")),
    Mechanism("o3m-lints", "o3m-synthetic.toml", *_O3M, _o3m("lints")),
    Mechanism("samba-ucb", "samba-synthetic.toml",
              "computational (AES-GCM, Paillier, masks); trusts Controller and Comp not to "
              "collude; ignores the context",
              "DC: the reward sum; Comp: masked scores in a fresh order; Controller: ciphertexts",
              _samba, regret=samba_contextual_regret),
    Mechanism("jdp-gaussian", "jdp-synthetic.toml", *_JDP, _jdp("gaussian"), dp=True),
    Mechanism("jdp-wishart", "jdp-synthetic.toml", *_JDP, _jdp("wishart"), dp=True),
    Mechanism("feducb-gaussian", "feducb-synthetic.toml",
              "(epsilon, delta) DP between agents, statistical; each agent trusts only itself",
              _FEDUCB_SEES, _feducb("theory"),
              dp=True, regret=feducb_regret_per_agent),
    # the theoretical radius swamps these reward gaps at any T this machine runs (issue 15):
    # the same privatised statistics with a fixed radius of 1 show what the noise itself costs
    Mechanism("feducb-gaussian-beta1", "feducb-synthetic.toml",
              "as feducb-gaussian (the radius is not part of the privacy); no regret bound",
              _FEDUCB_SEES, _feducb(1.0),
              dp=True, regret=feducb_regret_per_agent),
    Mechanism("linucb", "o3m-synthetic.toml", "none (non-private reference)",
              "one party sees everything", _o3m("linucb"), plaintext=True),
    Mechanism("egreedy", "hannun-synthetic.toml", "none (non-private reference)",
              "one party sees everything", _hannun, plaintext=True, refuses=_hannun_refuses),
]}
