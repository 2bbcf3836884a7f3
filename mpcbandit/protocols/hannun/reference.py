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
from mpcbandit.errors import ReplayError
from mpcbandit.protocols.hannun.stream import exploration

__all__ = ["task", "outcome", "outcome_of", "headline", "replay", "replay_run", "plaintext"]


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


def _folders(cfg: Config, data_dir: Path | None) -> BanditData | None:
    """Every party's folder read by this one process (the non-private reference), or None for
    the built-in task."""
    if data_dir is None:
        return None
    holders = [f"feature_holder.{i}" for i in range(cfg.section.feature_holders)]
    return folder_task(cfg, Path(data_dir), holders, "environment.0")


def plaintext(cfg: Config, data_dir: Path | None = None) -> dict:
    """The float64 reference on the config seed's exploration stream: a 'seeded' run's own;
    a 'secret' run draws its stream when it starts (``replay_run`` replays it afterwards).
    data_dir: every party's folder, read by this one process (the non-private reference)."""
    key = exploration_key(cfg.seed)
    return (replay(cfg, key, _folders(cfg, data_dir))
            | {"exploration": "seeded", "exploration_key": key.hex()})


def replay_run(cfg: Config, secure: dict, data_dir: Path | None = None) -> dict:
    """The float64 reference on the exploration key a secure run's dealer revealed at its end
    (`secure`: that run's summary): the run `mpcbandit run --plaintext --replay` makes, on the
    built-in task or every party's folder (data_dir)."""
    hexkey = secure.get("exploration_key")
    try:
        key = bytes.fromhex(hexkey)
    except (TypeError, ValueError):
        key = b""
    if len(key) != 32:
        raise ReplayError(f"the secure run's summary holds exploration_key {hexkey!r:.80}, not "
                          "64 hex digits (a secure Hannun run writes the key its dealer revealed)")
    return (replay(cfg, key, _folders(cfg, data_dir))
            | {"exploration": "replay", "exploration_key": key.hex()})


def headline(s: dict) -> list[str]:
    """Reward, regret and Theorem 1's privacy level; for a secure run, its agreement with the
    float64 replay and its cost per step; for --plaintext, which exploration stream it ran."""
    eta = (f"eps-greedy is eta-differentially private towards p' with eta = ln(|A| / eps) = "
           f"{s['eta']:.3g} (Theorem 1)" if s["eta"] is not None
           else "eps = 0: no exploration, so Theorem 1 gives no privacy towards p'")
    lines = [f"average reward {s['average_reward']:.4f}, cumulative regret "
             f"{s['cumulative_regret']:.1f}; {eta}"]
    if s["plaintext"]:
        lines.append({"seeded": "exploration drawn from the config seed (a 'secret' secure run "
                                "draws its own: `--replay RUN_DIR` replays that run's)",
                      "replay": "exploration replayed from a secure run's revealed key: its arms "
                                "are that run's but at fixed-point near-ties"}[s["exploration"]])
        return lines
    if s["agreement_with_replay"] is None:
        lines.append("the parties read their own folders, so no float64 replay here: `run "
                     "--plaintext --data DIR --replay RUN_DIR` is this run's")
    else:
        lines.append(f"float64 replay on this run's exploration key (what `mpcbandit run CONFIG "
                     f"--plaintext --replay RUN_DIR` computes): the same arm at "
                     f"{100 * s['agreement_with_replay']:.1f}% of steps (the others: fixed-point "
                     f"near-ties the secure run took the other way), cumulative reward "
                     f"{s['replay_cumulative_reward']:g}")
    lines.append(f"feature holders' online part: {1e3 * s['seconds_per_step']:.1f} ms and "
                 f"{s['critical_rounds_per_step']:.1f} rounds per step (the per-step rounds below "
                 "are the busiest party's, set-up and dealer requests included)")
    return lines
