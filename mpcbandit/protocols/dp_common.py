"""Shared by the differentially private linear bandit protocols (`jdp`, `feducb`).

The noise source of a privatizer, the `--plaintext` path (the same role code run in-process
over queue channels with the noise switched off) and the regret fields of the summary.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from mpcbandit.config import Config
from mpcbandit.dp.noise import NormalSource, seeded_source
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols import PartyContext, Protocol

__all__ = ["noise_source", "noise_off", "run_roles_inproc", "regret_fields"]


def noise_source(cfg: Config, seeded: bool, purpose: str) -> NormalSource:
    """Privacy noise: AES-CTR from os.urandom, or from the config seed when `seeded` (tests)."""
    return seeded_source(cfg.seed, purpose) if seeded else NormalSource()


def noise_off(cfg: Config) -> Config:
    """cfg with its protocol section's noise set to "none" (the `--plaintext` reference)."""
    return dataclasses.replace(cfg, section=dataclasses.replace(cfg.section, noise="none"))


def run_roles_inproc(cfg: Config, proto: Protocol) -> list[dict]:
    """Every role of cfg in its own thread over in-process channels; results as from `run`."""
    roles = proto.roles(cfg.section)
    names = [f"{r}.{i}" for r, i in roles]

    def role_fn(role: str, index: int):
        return lambda chan: proto.run_role(PartyContext(config=cfg, role=role, index=index, chan=chan))

    results, _ = run_inproc({f"{r}.{i}": role_fn(r, i) for r, i in roles},
                            deadline_s=cfg.run.deadline_s,
                            peers={f"{r}.{i}": proto.peers_of(cfg.section, r, i) for r, i in roles})
    return [{"role": r, "index": i, "output": results[n]} for (r, i), n in zip(roles, names)]


def regret_fields(regret_per_round: np.ndarray, agents: int = 1) -> dict:
    """Per-round and cumulative (group) pseudo-regret, final and per agent."""
    per_round = np.asarray(regret_per_round, dtype=np.float64)
    cum = np.cumsum(per_round)
    final = float(cum[-1]) if cum.size else 0.0
    return {"regret": per_round.tolist(), "cumulative_regret": cum.tolist(),
            "final_regret": final, "final_regret_per_agent": final / agents}
