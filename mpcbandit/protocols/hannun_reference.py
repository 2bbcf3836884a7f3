"""Hannun's float64 reference: the plaintext epsilon-greedy run on a given exploration stream
(the secure run's equal) over the built-in task or every party's folder, and what a run earned
(its summary's outcome and headline)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.bandits.egreedy import exploration_key, run_eps_greedy
from mpcbandit.config import Config
from mpcbandit.data import BanditData
from mpcbandit.data.hannun_data import folder_task, task
from mpcbandit.protocols.hannun_stream import exploration

__all__ = ["task", "outcome", "outcome_of", "headline", "replay", "plaintext"]


def outcome(s, data: BanditData, arms: np.ndarray) -> dict:
    """What a run of arms on data earned: rewards, regret, and Theorem 1's eta."""
    t = np.arange(len(arms))
    regret = data.expected.max(axis=1) - data.expected[t, arms]
    return outcome_of(s, arms, data.rewards[t, arms], regret)


def outcome_of(s, arms, rewards, regret) -> dict:
    """The summary's outcome of a run from its arms, rewards and regret per step."""
    arms, rewards, regret = (np.asarray(v) for v in (arms, rewards, regret))
    return {"steps": len(arms),
            "series": {"arms": arms.tolist(), "rewards": rewards.tolist(), "regret": regret.tolist()},
            "cumulative_reward": float(rewards.sum()), "average_reward": float(rewards.mean()),
            "cumulative_regret": float(regret.sum()), "eta": s.eta}


def replay(cfg: Config, key: bytes, data: BanditData | None = None) -> dict:
    """The float64 reference on the exploration stream of key (a secure run's: the dealer
    writes its key to its own result when the run ends), on data (default: the built-in task)."""
    s = cfg.section
    data = task(cfg) if data is None else data
    res = run_eps_greedy(data.contexts, data.rewards, exploration(cfg, key),
                         regularizer=s.regularizer, reinvert_every=s.reinvert_every)
    return outcome(s, data, res.arms)


def plaintext(cfg: Config, data_dir: Path | None = None) -> dict:
    """The float64 reference on the config seed's exploration stream: a 'seeded' run's own;
    a 'secret' run draws its stream when it starts, so its summary compares it with
    ``replay`` of its dealer's key instead. data_dir: every party's folder, read by this one
    process (the non-private reference)."""
    if data_dir is None:
        return replay(cfg, exploration_key(cfg.seed))
    s = cfg.section
    holders = [f"feature_holder.{i}" for i in range(s.feature_holders)]
    return replay(cfg, exploration_key(cfg.seed), folder_task(cfg, Path(data_dir), holders,
                                                              "environment.0"))


def headline(s: dict) -> list[str]:
    """Reward and regret; for a secure run, its agreement with float64 and its cost per step."""
    lines = [f"average reward {s['average_reward']:.4f}, cumulative regret {s['cumulative_regret']:.1f} "
             f"(eta {s['eta']:g})"]
    if "agreement_with_plaintext" in s:
        if s["agreement_with_plaintext"] is None:
            lines.append("the parties read their own folders: `run --plaintext --data` is the "
                         "float64 reference")
        else:
            lines.append(f"arms equal to the float64 run on the same exploration at "
                         f"{100 * s['agreement_with_plaintext']:.1f}% of steps (its cumulative "
                         f"reward {s['plaintext_cumulative_reward']:g})")
        lines.append(f"{1e3 * s['seconds_per_step']:.1f} ms and {s['critical_rounds_per_step']:.1f} "
                     f"rounds per step on the feature holders' critical path")
    return lines
