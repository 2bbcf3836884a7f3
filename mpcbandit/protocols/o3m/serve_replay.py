"""`mpcbandit serve-replay DIR` for O3M's service: every decision recomputed in float64 on the
unmasked contexts (the centralised LinUCB / LinTS of `run --plaintext`) from the parties' logs,
in the AP's op order, compared with the arms the AP served.

It reads the AP's op log (which ids each batch held, in order; each update's |theta|), every
participant's columns (its request log, or its data folder), and the AP's rewards and
decisions: every organisation's data in one process, the non-private check. O3M is lossless
(Q is orthogonal): the masked model is the unmasked one rotated, so the scores agree to
rounding and |theta| to ~1e-15 (`theta_norm_gap`, the largest over the log's updates).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mpcbandit.bandits.linear import LinearBandit, argmax_first, ts_scores, ucb_scores
from mpcbandit.config import Config
from mpcbandit.data import o3m_data
from mpcbandit.errors import DataError
from mpcbandit.protocols import seeded_rng
from mpcbandit.protocols.hannun.serve_replay import party_records
from mpcbandit.protocols.o3m.protocol import AP, TIE_TOL, TS_PURPOSE, participant_name

__all__ = ["replay_service", "scores"]

AP0 = f"{AP}.0"


def scores(bandit: LinearBandit, contexts: np.ndarray, s, sampler) -> np.ndarray:
    """The K arms' scores o3m.choose_arm ranks (UCB, or Thompson sampled in score space)."""
    if s.algorithm == "linucb":
        return ucb_scores(contexts, bandit.theta, bandit.v_inv, s.beta)
    return ts_scores(contexts, bandit.theta, bandit.v_inv, s.v, sampler)


def _columns(cfg: Config, folder: Path, data: str | None) -> list:
    """Per participant: its name, id -> its K x d_p columns posted, its data folder's lookup."""
    s, out = cfg.section, []
    for p in range(s.participants):
        name = participant_name(p)
        posted = {r["id"]: r["features"] for r in party_records(folder / name / "requests.wal")
                  if r.get("kind") == "context"}
        looked = o3m_data.lookup(cfg, p, Path(data) / name, name) if data else None
        out.append((name, posted, looked))
    return out


def _contexts(s, columns: list, rid: str, n: int) -> np.ndarray:
    """The unmasked K x d context of request rid (every participant's columns side by side)."""
    parts = []
    for (name, posted, looked), width in zip(columns, s.partition):
        row = posted.get(rid)
        if row is None and looked is not None:
            row = looked.features_of(rid)
        if row is None:
            raise DataError(f"op {n}: {name} holds no columns for id {rid!r} (its log nor its "
                            "folder)")
        parts.append(np.asarray(row, dtype=np.float64).reshape(s.arms, width))
    return np.concatenate(parts, axis=1)


def replay_service(cfg: Config, folder: Path, data: str | None = None) -> dict:
    """Replay the service in folder (each reward applied to the arm served); how many arms
    equal those served, each that differs (a near tie: scores within twice the tie tolerance),
    and the largest |theta| gap to the AP's."""
    s = cfg.section
    folder = Path(folder)
    ops = party_records(folder / AP0 / "ops.wal")
    records = party_records(folder / AP0 / "requests.wal")
    served = {r["id"]: r["arm"] for r in records if r.get("kind") == "decision"}
    rewards = {r["id"]: r["reward"] for r in records if r.get("kind") == "reward"}
    columns = _columns(cfg, folder, data)
    bandit, sampler = LinearBandit(s.dims, s.lam), seeded_rng(cfg.seed, TS_PURPOSE)
    pending: dict[str, np.ndarray] = {}
    decided, differ, near, gap = 0, [], [], 0.0
    for op in ops:
        ids, n = op["ids"], op["n"]
        if op["kind"] == "decide":
            for rid in ids:
                x = _contexts(s, columns, rid, n)
                score = scores(bandit, x, s, sampler)
                arm, got = argmax_first(score, TIE_TOL), served.get(rid)
                decided += 1
                pending[rid] = x[arm if got is None else got]
                if got is None:
                    differ.append({"id": rid, "served": None, "replay": arm})
                elif got != arm:
                    within = 2 * TIE_TOL * max(1.0, abs(float(score.max())))
                    apart = float(score[arm] - score[got])
                    (near if apart <= within else differ).append(
                        {"id": rid, "served": got, "replay": arm, "gap": apart,
                         "near_tie": within})
        elif op["kind"] == "update":
            for rid in ids:
                if rid not in rewards or rid not in pending:
                    raise DataError(f"op {n}: id {rid!r} has no reward in the log of {AP0} or "
                                    "no decision before")
                bandit.update(pending.pop(rid), rewards[rid])
            if "theta_norm" in op:
                gap = max(gap, abs(float(np.linalg.norm(bandit.theta)) - op["theta_norm"]))
        else:
            for rid in ids:
                pending.pop(rid, None)
    agree = decided - len(differ) - len(near)
    return {"decisions": decided, "batches": sum(op["kind"] == "decide" for op in ops),
            "rewards": sum(len(op["ids"]) for op in ops if op["kind"] == "update"),
            "agree": agree, "agreement": agree / decided if decided else 1.0,
            "near_ties": near, "disagree": differ, "theta_norm_gap": gap}
