"""Shared by the differentially private linear bandit protocols (`jdp`, `feducb`).

The noise source of a privatizer, the `--plaintext` path (the same role code run in-process
over queue channels with the noise switched off) and the regret series of the summary.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mpcbandit.bodies import expect_array, expect_fields
from mpcbandit.config import Config
from mpcbandit.data.common_task import COMMON
from mpcbandit.data.dp_data import user_stream
from mpcbandit.dp.noise import NormalSource, seeded_source

#: the environments a [jdp] or [feducb] section's `data` names
DATA = ("gap", *COMMON)

__all__ = ["DATA", "user_stream", "noise_source", "noise_off", "regret_series", "privacy_phrase",
           "random_action_regret", "regret_per_round", "learning_phrase", "expect_statistics"]


def noise_source(cfg: Config, seeded: bool, purpose: str) -> NormalSource:
    """Privacy noise: AES-CTR from os.urandom, or from the config seed when `seeded` (tests)."""
    return seeded_source(cfg.seed, purpose) if seeded else NormalSource()


def noise_off(cfg: Config) -> Config:
    """cfg with its protocol section's noise set to "none" (the `--plaintext` reference)."""
    return dataclasses.replace(cfg, section=dataclasses.replace(cfg.section, noise="none"))


def regret_series(regret_per_step: np.ndarray) -> dict:
    """The summary's per-step (group) pseudo-regret and its running sum."""
    per_step = np.asarray(regret_per_step, dtype=np.float64)
    return {"regret": per_step.tolist(), "cumulative_regret": np.cumsum(per_step).tolist()}


def random_action_regret(seed: int, s, stream: str, steps: int) -> np.ndarray:
    """A uniformly random action's expected regret at each of the first `steps` rounds of a user
    stream: the level of a learner that learns nothing. A stream's action sets do not depend on
    what was played, so they are read again here from the seed."""
    env = user_stream(seed, s, stream)
    return np.array([m.max() - m.mean() for m in (env.action_set()[1] for _ in range(steps))])


def regret_per_round(regret: np.ndarray, random: np.ndarray) -> dict:
    """Whether a run learnt: its mean regret per round (and per stream: rows are streams) over
    the first and the last tenth of the rounds, beside a random action's over the whole run."""
    regret, random = np.atleast_2d(regret), np.atleast_2d(random)
    window = max(1, regret.shape[1] // 10)
    return {"window": window, "first": float(regret[:, :window].mean()),
            "last": float(regret[:, -window:].mean()), "random_action": float(random.mean())}


def learning_phrase(r: dict, per: str) -> str:
    """'regret per round: 0.120 over the first 300 rounds, 0.004 over the last 300; a uniformly
    random action's: 0.180' from a summary's regret_per_round."""
    return (f"regret per {per}: {r['first']:.3f} over the first {r['window']} rounds, "
            f"{r['last']:.3f} over the last {r['window']}; a uniformly random action's: "
            f"{r['random_action']:.3f}")


def privacy_phrase(privacy: dict) -> str:
    """'gaussian noise, epsilon = 1, delta = 0.1' (or 'no noise') from a summary's privacy."""
    if privacy.get("noise", "none") == "none":
        return "no noise"
    return f"{privacy['noise']} noise, epsilon = {privacy['epsilon']:g}, delta = {privacy['delta']:g}"


def expect_statistics(body, dims: int, peer: str, tag: str) -> tuple[np.ndarray, np.ndarray]:
    """(gram d x d, vec d) of a peer's message {"gram", "vec"}, checked (a ProtocolError
    naming the peer and tag otherwise)."""
    body = expect_fields(body, ("gram", "vec"), peer, tag)
    return (expect_array(body["gram"], (dims, dims), peer, tag),
            expect_array(body["vec"], (dims,), peer, tag))
