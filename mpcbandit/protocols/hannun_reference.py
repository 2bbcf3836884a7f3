"""Hannun's data and float64 reference: the task every party derives from the public seed, the
plaintext epsilon-greedy run on a given exploration stream (the secure run's equal), and what a
run earned (its summary's outcome and headline)."""

from __future__ import annotations

import numpy as np

from mpcbandit.bandits.egreedy import exploration_key, run_eps_greedy
from mpcbandit.config import Config
from mpcbandit.data import BanditData
from mpcbandit.data.tasks import make_task, preload
from mpcbandit.errors import ConfigError, ReplayError
from mpcbandit.protocols.hannun_stream import exploration

__all__ = ["task", "outcome", "headline", "replay", "replay_run", "plaintext", "preload_task"]


def task(cfg: Config) -> BanditData:
    """The experiment's data (public simulation: every process derives it from the seed)."""
    s = cfg.section
    try:
        return make_task(s.data, iterations=s.iterations, dims=s.dims, arms=s.arms,
                         seed=cfg.seed, data_dir=s.data_dir, sigma=s.sigma)
    except (FileNotFoundError, ValueError) as e:
        raise ConfigError("hannun.data", str(e)) from None


def preload_task(cfg: Config) -> None:
    """Read what the experiment's data reads from disk into this process (Protocol.prepare)."""
    s = cfg.section
    preload(s.data, dims=s.dims, arms=s.arms, seed=cfg.seed, data_dir=s.data_dir)


def outcome(s, data: BanditData, arms: np.ndarray) -> dict:
    """What a run of arms on data earned: rewards, regret, and Theorem 1's eta."""
    t = np.arange(len(arms))
    rewards = data.rewards[t, arms]
    regret = data.expected.max(axis=1) - data.expected[t, arms]
    return {"steps": len(arms),
            "series": {"arms": arms.tolist(), "rewards": rewards.tolist(), "regret": regret.tolist()},
            "cumulative_reward": float(rewards.sum()), "average_reward": float(rewards.mean()),
            "cumulative_regret": float(regret.sum()), "eta": s.eta}


def replay(cfg: Config, key: bytes) -> dict:
    """The float64 reference on the exploration stream of key (a secure run's: the dealer
    writes its key to its own result when the run ends)."""
    s = cfg.section
    data = task(cfg)
    res = run_eps_greedy(data.contexts, data.rewards, exploration(cfg, key),
                         regularizer=s.regularizer, reinvert_every=s.reinvert_every)
    return outcome(s, data, res.arms)


def plaintext(cfg: Config) -> dict:
    """The float64 reference on the config seed's exploration stream: a 'seeded' run's own;
    a 'secret' run draws its stream when it starts (``replay_run`` replays it afterwards)."""
    key = exploration_key(cfg.seed)
    return replay(cfg, key) | {"exploration": "seeded", "exploration_key": key.hex()}


def replay_run(cfg: Config, secure: dict) -> dict:
    """The float64 reference on the exploration key a secure run's dealer revealed at its end
    (`secure`: that run's summary): the run `mpcbandit run --plaintext --replay` makes."""
    hexkey = secure.get("exploration_key")
    try:
        key = bytes.fromhex(hexkey)
    except (TypeError, ValueError):
        key = b""
    if len(key) != 32:
        raise ReplayError(f"the secure run's summary holds exploration_key {hexkey!r:.80}, not "
                          "64 hex digits (a secure Hannun run writes the key its dealer revealed)")
    return replay(cfg, key) | {"exploration": "replay", "exploration_key": key.hex()}


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
    lines.append(f"float64 replay on this run's exploration key (what `mpcbandit run CONFIG "
                 f"--plaintext --replay RUN_DIR` computes): the same arm at "
                 f"{100 * s['agreement_with_replay']:.1f}% of steps (the others: fixed-point "
                 f"near-ties the secure run took the other way), cumulative reward "
                 f"{s['replay_cumulative_reward']:g}")
    lines.append(f"feature holders' online part: {1e3 * s['seconds_per_step']:.1f} ms and "
                 f"{s['critical_rounds_per_step']:.1f} rounds per step (the per-step rounds below "
                 "are the busiest party's, set-up and dealer requests included)")
    return lines
