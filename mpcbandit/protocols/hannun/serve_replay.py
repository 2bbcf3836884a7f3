"""`mpcbandit serve-replay DIR` for Hannun's service: every decision recomputed in float64
(``serve_reference.replay_log``) from the parties' logs, compared with the arms p'
served.

It reads p''s op log (which ids each batch held, in order), each feature holder's context
slices (its request log, or its data folder), p'''s rewards, p''s decisions and the dealer's
revealed exploration keys: every organisation's data in one process, the non-private check (as
`run --plaintext --data` is). In secret exploration the dealer's keys are revealed only when
the service stops (docs/serve.md); each key covers the decisions up to that stop.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.config import Config
from mpcbandit.data import hannun_data
from mpcbandit.errors import DataError, MpcBanditError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.hannun.protocol import DEALER, PULLER, REWARD, holders
from mpcbandit.protocols.hannun.serve_reference import ServeReference, replay_log
from mpcbandit.serve.wal import read_records

__all__ = ["ScheduledReference", "key_schedule", "serve_log", "model_order", "near_tie",
           "replay_service", "party_records", "NEAR_TIE_UNITS"]


class ScheduledReference(ServeReference):
    """The float64 replay with the dealer's key schedule: the stream of each key from the
    decision it starts at (a service draws a fresh key each time its key is revealed)."""

    def __init__(self, *args, schedule: list[tuple[int, bytes]], **kw):
        # a service that decided nothing revealed no key (its dealer's result.json has none),
        # and its replay draws nothing: any key stands in
        super().__init__(*args, key=schedule[0][1] if schedule else bytes(32), **kw)
        self.schedule = sorted(schedule)[1:]

    def decide(self, contexts: np.ndarray) -> np.ndarray:
        while self.schedule and self.schedule[0][0] <= self.decided:
            self.prg = Prg(self.schedule.pop(0)[1])
        if self.schedule and self.decided + len(contexts) > self.schedule[0][0]:
            raise DataError(f"a batch of decisions {self.decided}..{self.decided + len(contexts)}"
                            f" spans a new key's start at {self.schedule[0][0]}")
        return super().decide(contexts)


def party_records(path: Path) -> list[dict]:
    """The records of one party's log in a service's folder (refused naming it if missing)."""
    if not path.exists():
        raise MpcBanditError(f"{path} is missing: serve-replay reads every party's logs "
                             f"({path.parent.parent}/<party>/)")
    return read_records(path)[0]


def key_schedule(cfg: Config, folder: Path, decisions: int) -> list[tuple[int, bytes]]:
    """The exploration keys of the first `decisions` decisions: the config seed's (seeded), or
    the dealer's revealed ones (secret), which must cover them."""
    if cfg.section.exploration == "seeded":
        return [(0, exploration_key(cfg.seed))]
    path = folder / f"{DEALER}.0" / "result.json"
    try:
        keys = json.loads(path.read_text())["keys"]
    except FileNotFoundError:
        keys = []
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e})") from None
    covered = max((k["to"] for k in keys), default=0)
    if covered < decisions:
        raise MpcBanditError(f"the dealer's exploration key of decisions {covered}.."
                             f"{decisions} is not revealed ({path}): it is revealed when the "
                             "service stops (SIGTERM); stop it, then replay")
    return [(k["from"], bytes.fromhex(k["key"])) for k in keys]


def _slices(cfg: Config, folder: Path, data: str | None) -> list:
    """Per feature holder: id -> its slice, from its request log, then its data folder."""
    out = []
    for i, h in enumerate(holders(cfg.section)):
        posted = {r["id"]: r["features"] for r in party_records(folder / h / "requests.wal")
                  if r.get("kind") == "context"}
        looked = hannun_data.lookup(cfg, i, Path(data) / h, h) if data else None
        out.append((h, posted, looked))
    return out


def _slice(h: str, posted: dict, looked, rid: str, n: int) -> np.ndarray:
    if rid in posted:
        return np.asarray(posted[rid], dtype=np.float64)
    row = looked.features_of(rid) if looked is not None else None
    if row is None:
        raise DataError(f"op {n}: {h} holds no slice for id {rid!r} (its log nor its folder)")
    return row


def serve_log(cfg: Config, folder: Path, data: str | None = None) -> list[tuple]:
    """The service's log as replay_log reads it: ("decide", ids, contexts) and ("reward",
    ids, rewards), in the order of the model each read: p''s op order, but a decision batch
    that read the model before an update under way (its record's ``model``) before it."""
    ops = party_records(folder / f"{PULLER}.0" / "ops.wal")
    rewards = {r["id"]: r["reward"] for r in party_records(folder / f"{REWARD}.0" / "requests.wal")
               if r.get("kind") == "reward"}
    holders_slices = _slices(cfg, folder, data)

    def entries():   # in op order: an error names the first op that has one
        for op in ops:
            ids, n = op["ids"], op["n"]
            if op["kind"] == "decide" and ids:
                yield op, ("decide", ids, np.array([np.concatenate(
                    [_slice(h, posted, looked, rid, n) for h, posted, looked in holders_slices])
                    for rid in ids]))
            elif op["kind"] == "update":
                missing = [i for i in ids if i not in rewards]
                if missing:
                    raise DataError(f"op {n}: no reward for id {missing[0]!r} in the log of "
                                    f"{REWARD}.0")
                yield op, ("reward", ids, np.array([rewards[i] for i in ids]))

    return model_order(entries())


def model_order(entries) -> list:
    """(op record, entry) pairs of decision batches and updates in p''s op order -> the entries
    in the order of the model each read: a batch that read the model before an update under way
    (its record's ``model``; none: the latest) goes after the batches that read that model,
    before that update. The batches are kept by the version they read: linear in the log."""
    reads: list[list] = [[]]   # reads[k]: the batches that read model k (after k updates)
    updates: list = []         # updates[k]: update k + 1, applied after reads[k]
    for op, entry in entries:
        if op["kind"] == "update":
            updates.append(entry)
            reads.append([])
            continue
        model = op.get("model", len(updates))
        if not isinstance(model, int) or not 0 <= model <= len(updates):
            raise DataError(f"op {op['n']}: model version {model!r}, after {len(updates)} "
                            "updates")
        reads[model].append(entry)
    return [e for k, batch in enumerate(reads) for e in (*batch, *updates[k:k + 1])]


#: units of 2^-L per unit of |b_a|_1 that a served score may stand from float64's: over a
#: 6,400-decision log (A = 10, D = 20, |b_a|_1 up to 305) the secure scores stood within 0.36
#: units per unit of |b_a|_1 of the replay's (1.1e-4), W^-1 within 2.4 units (no drift); the
#: score's error grows with b. 2 per unit, for the two arms compared, leaves a margin of 5
NEAR_TIE_UNITS = 2


def near_tie(ref: ServeReference, a: int, b: int) -> float:
    """How close the float64 scores of arms a and b may be for the fixed point to order them
    either way (docs/serve.md, "serve-replay")."""
    return NEAR_TIE_UNITS * 2.0 ** -ref.bits * float(np.abs(ref.b[[a, b]]).sum())


def replay_service(cfg: Config, folder: Path, data: str | None = None) -> dict:
    """Replay the service in folder (each reward applied to the arm served); how many of the
    replay's arms equal those served, and each that differs with its float64 score gap."""
    s = cfg.section
    log = serve_log(cfg, folder, data)
    served = {r["id"]: r["arm"] for r in party_records(folder / f"{PULLER}.0" / "requests.wal")
              if r.get("kind") == "decision"}
    decided = sum(len(ids) for kind, ids, _ in log if kind == "decide")
    ref = ScheduledReference(s.arms, s.dims, s.epsilon, s.precision_bits,
                             schedule=key_schedule(cfg, folder, decided),
                             regularizer=s.regularizer)
    differ, near = [], []

    def compare(ids, chosen):
        for row, (rid, arm) in enumerate(zip(ids, chosen)):
            got = served.get(rid)
            if got == arm:
                continue
            if got is None:   # decided in the op log, never logged by p'
                differ.append({"id": rid, "served": None, "replay": int(arm)})
                continue
            gap = float(ref.scores[row, arm] - ref.scores[row, got])
            within = near_tie(ref, arm, got)
            (near if gap <= within else differ).append(
                {"id": rid, "served": got, "replay": int(arm), "gap": gap, "near_tie": within})

    arms = replay_log(log, ref, served, compare)
    return {"decisions": len(arms), "batches": sum(k == "decide" for k, _, _ in log),
            "rewards": sum(len(ids) for k, ids, _ in log if k == "reward"),
            "agree": len(arms) - len(differ) - len(near),
            "agreement": (len(arms) - len(differ) - len(near)) / len(arms) if arms else 1.0,
            "near_ties": near, "disagree": differ}
