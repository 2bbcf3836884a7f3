"""`mpcbandit serve-replay DIR` for Hannun's service: every decision recomputed in float64
(``serve_reference.replay_log``) from the parties' logs, compared with the arms p'
served.

It reads p''s op log (which ids each batch held, in order), each feature holder's context
slices (its request log, or its data folder), p'''s rewards, p''s decisions and the dealer's
revealed exploration keys: every organisation's data in one process, the non-private check (as
`run --plaintext --data` is). A decision whose exploration key is revealed (or seeded) is
checked exactly. One whose key is not (hannun.reveal = "never", or not yet) cannot be told
explored or greedy: its arm is checked against the greedy arm, and the count of those served
another arm against what exploration explains (``off_greedy_bound``). The model is replayed
exactly either way: an update applies the reward to the arm served, explored or not.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from mpcbandit.bandits.egreedy import ExplorationSamples, exploration_key
from mpcbandit.config import Config
from mpcbandit.data import hannun_data
from mpcbandit.errors import DataError, MpcBanditError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.hannun.protocol import DEALER, PULLER, REWARD, holders
from mpcbandit.protocols.hannun.serve_reference import ServeReference, replay_log
from mpcbandit.serve.wal import read_records

__all__ = ["ScheduledReference", "revealed_keys", "off_greedy_bound", "serve_log", "model_order",
           "near_tie", "replay_service", "party_records", "NEAR_TIE_UNITS", "FALSE_ALARM"]

#: the probability that a service whose every decision is right is said to serve more
#: decisions off the greedy arm than exploration explains (decisions without a revealed key)
FALSE_ALARM = 1e-6


class ScheduledReference(ServeReference):
    """The float64 replay on the dealer's revealed keys: the stream of each key from the
    decision it starts at. A decision no revealed key covers draws nothing and is decided
    greedily (the first of the best arms); ``known`` says which of the last batch's had a key."""

    def __init__(self, *args, schedule: list[tuple[int, int | None, bytes]], **kw):
        super().__init__(*args, key=bytes(32), **kw)   # each segment's key replaces it
        self.schedule = sorted(schedule, key=lambda seg: seg[0])
        self.known = np.zeros(0, dtype=bool)
        self._first: int | None = None   # the first decision of the segment self.prg draws

    def _covering(self, t: int) -> tuple[int, int | None, bytes] | None:
        return next((seg for seg in self.schedule
                     if seg[0] <= t and (seg[1] is None or t < seg[1])), None)

    def draw(self, count: int) -> ExplorationSamples:
        t, end = self.decided, self.decided + count
        parts, known = [], []
        while t < end:
            seg = self._covering(t)
            if seg is None:   # no key revealed: nothing to draw, each row greedy
                upto = min([end, *(first for first, _, _ in self.schedule if first > t)])
                n, A = upto - t, self.arms
                parts.append(ExplorationSamples(np.zeros(n, dtype=np.int64),
                                                np.zeros((n, A), dtype=np.int64),
                                                np.ones((n, A), dtype=np.int64), self.bits))
            else:
                first, stop, key = seg
                if first != self._first:   # a segment begins (drawn and dropped up to t)
                    self._first, self.prg = first, Prg(key)
                    super().draw(t - first)
                upto = end if stop is None else min(end, stop)
                parts.append(super().draw(upto - t))
            known.append(np.full(upto - t, seg is not None))
            t = upto
        self.known = np.concatenate(known) if known else np.zeros(0, dtype=bool)
        return ExplorationSamples(*(np.concatenate([getattr(p, f) for p in parts])
                                    for f in ("explore", "uniform", "perm")), self.bits)


def party_records(path: Path) -> list[dict]:
    """The records of one party's log in a service's folder (refused naming it if missing)."""
    if not path.exists():
        raise MpcBanditError(f"{path} is missing: serve-replay reads every party's logs "
                             f"({path.parent.parent}/<party>/)")
    return read_records(path)[0]


def revealed_keys(cfg: Config, folder: Path) -> tuple[str, list[tuple[int, int | None, bytes]]]:
    """The exploration policy ("seeded", or hannun.reveal as the dealer's result.json says) and
    the keys a replay has, (first decision, end or None, key): the config seed's (seeded), or
    each one the dealer revealed (secret; none if it revealed none)."""
    if cfg.section.exploration == "seeded":
        return "seeded", [(0, None, exploration_key(cfg.seed))]
    path = folder / f"{DEALER}.0" / "result.json"
    try:
        result = json.loads(path.read_text())
        keys = [(int(k["from"]), int(k["to"]), bytes.fromhex(k["key"])) for k in result["keys"]]
        return str(result.get("reveal", cfg.section.reveal)), keys
    except FileNotFoundError:
        return cfg.section.reveal, []
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise MpcBanditError(f"{path} is damaged ({type(e).__name__}: {e})") from None


def off_greedy_bound(decisions: int, epsilon: float, arms: int,
                     false_alarm: float = FALSE_ALARM) -> int:
    """The most of `decisions` served off the greedy arm that exploration explains: the least
    k with P(Binomial(decisions, epsilon (A - 1) / A) > k) <= false_alarm. Each decision
    explores with probability epsilon whatever came before, and an exploring one takes each arm
    alike, so it leaves the greedy arm with probability at most (A - 1) / A."""
    p = epsilon * (arms - 1) / arms
    if decisions == 0 or p == 0.0:
        return 0
    if p >= 1.0:
        return decisions
    # the tail's terms from floor(n p) on (the median is no lower, so neither is the bound)
    # until they are negligible, then summed from the top down
    k = int(decisions * p)
    term = math.exp(math.lgamma(decisions + 1) - math.lgamma(k + 1)
                    - math.lgamma(decisions - k + 1) + k * math.log(p)
                    + (decisions - k) * math.log1p(-p))
    terms = [term]
    while k + len(terms) <= decisions and (term > false_alarm * 1e-9 or len(terms) < 3):
        j = k + len(terms) - 1
        term *= (decisions - j) / (j + 1) * p / (1 - p)
        terms.append(term)
    above, bound = 0.0, k + len(terms) - 1   # above: P(X > bound)
    while bound > k and above + terms[bound - k] <= false_alarm:
        above += terms[bound - k]
        bound -= 1
    return bound


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
    factor = hannun_data.service_factor(cfg.section)   # as each holder scaled its slices
    def entries():   # in op order: an error names the first op that has one
        for op in ops:
            ids, n = op["ids"], op["n"]
            if op["kind"] == "decide" and ids:
                yield op, ("decide", ids, factor * np.array([np.concatenate(
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
    """Replay the service in folder (each reward applied to the arm served): how many of the
    replay's arms equal those served, each that differs with its float64 score gap; of the
    decisions without a revealed key, those served off the greedy arm and how many
    exploration explains."""
    s = cfg.section
    log = serve_log(cfg, folder, data)
    served = {r["id"]: r["arm"] for r in party_records(folder / f"{PULLER}.0" / "requests.wal")
              if r.get("kind") == "decision"}
    policy, keys = revealed_keys(cfg, folder)
    ref = ScheduledReference(s.arms, s.dims, s.epsilon, s.precision_bits, schedule=keys,
                             regularizer=s.regularizer)
    differ, near, off, unknown = [], [], [], 0

    def compare(ids, chosen):
        nonlocal unknown
        unknown += int((~ref.known).sum())
        for row, (rid, arm) in enumerate(zip(ids, chosen)):
            got = served.get(rid)
            if got is None:   # decided in the op log, never logged by p'
                differ.append({"id": rid, "served": None, "replay": int(arm)})
                continue
            # without its key a decision's arm is right if it is a greedy one (ties: any)
            if got == arm or (not ref.known[row] and ref.scores[row, got] == ref.scores[row, arm]):
                continue
            gap = float(ref.scores[row, arm] - ref.scores[row, got])
            within = near_tie(ref, arm, got)
            seen = {"id": rid, "served": got, "replay": int(arm), "gap": gap, "near_tie": within}
            if gap <= within:
                near.append(seen | {"greedy_only": not ref.known[row]})
            else:
                (differ if ref.known[row] else off).append(seen)

    arms = replay_log(log, ref, served, compare)
    agree = len(arms) - len(differ) - len(near) - len(off)
    return {"decisions": len(arms), "batches": sum(k == "decide" for k, _, _ in log),
            "rewards": sum(len(ids) for k, ids, _ in log if k == "reward"),
            "agree": agree, "agreement": agree / len(arms) if arms else 1.0,
            "near_ties": near, "disagree": differ, "reveal": policy,
            "exact": len(arms) - unknown, "greedy_only": unknown, "off_greedy": off,
            "off_greedy_bound": off_greedy_bound(unknown, s.epsilon, s.arms),
            "off_greedy_rate": s.epsilon * (s.arms - 1) / s.arms,
            "false_alarm": FALSE_ALARM}
