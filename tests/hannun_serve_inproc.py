"""Run a serve log through Hannun's batched op chains (mpcbandit/protocols/hannun/ops.py) with
every party a thread, for tests: feature holders, p', p'' and the dealer, on the in-process
link; and random logs of batched decisions and delayed, shuffled or missing rewards."""

from __future__ import annotations

import math
import time

import numpy as np

from deadlines import deadline
from dealer import serve
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.opening import open_values
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.shares import AShare
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols.hannun.protocol import HannunSection
from mpcbandit.protocols.hannun.ops import (
    DECIDE,
    UPDATE,
    decide,
    explorations,
    initial_state,
    opened_arms,
    share_choices,
    share_contexts,
    share_rewards,
    update,
)
from mpcbandit.protocols.hannun.serve_reference import ServeReference
from mpcbandit.protocols.hannun.stream import ExplorationShares, push_exploration

PULLER, REWARD, DEALER = "arm_puller.0", "reward_holder.0", "dealer.0"


def section(log, **kw) -> HannunSection:
    """A Hannun section for the log: its iterations are the log's decisions (the dealer's
    exploration stream covers them)."""
    decisions = sum(len(ids) for kind, ids, _ in log if kind == "decide")
    return HannunSection(iterations=decisions, **kw)


def random_log(rng, ref: ServeReference, decisions: int, *, max_batch: int = 12,
               rewarded: float = 0.8, max_delay: int = 4, common: float = 0.0):
    """A log of batched decisions of random sizes, replayed on ref as it is written: each
    decision is rewarded with probability `rewarded` after up to max_delay more batches, the
    rewards of a batch in random order, for the arm ref picked (Bernoulli of a linear model per
    arm); contexts of norm in [0.5, 1], a fifth of them exactly 1, leaning towards one direction
    with weight `common` (W's largest eigenvalue grows with its rewards). Returns (log, ref's
    arms)."""
    theta = rng.normal(0, 1, (ref.arms, ref.dims))
    theta /= np.linalg.norm(theta, axis=1, keepdims=True)
    centre = common * math.sqrt(ref.dims) * _unit(rng.normal(0, 1, ref.dims)) if common else 0.0
    log, pending, n, arms, contexts = [], [], 0, {}, {}
    while n < decisions or pending:
        if n < decisions:
            size = int(min(rng.integers(1, max_batch + 1), decisions - n))
            x = rng.normal(0, 1, (size, ref.dims)) + centre
            norm = np.where(rng.random(size) < 0.2, 1.0, rng.uniform(0.5, 1.0, size))
            x *= (norm / np.linalg.norm(x, axis=1))[:, None]
            ids = [f"d{n + k}" for k in range(size)]
            log.append(("decide", ids, x))
            for k, (i, a) in enumerate(zip(ids, ref.decide(x))):
                arms[i], contexts[i] = int(a), x[k]
                if rng.random() < rewarded:
                    p = np.clip(0.5 + 0.5 * theta[a] @ x[k], 0, 1)
                    pending.append((len(log) + int(rng.integers(0, max_delay + 1)), i,
                                    float(rng.random() < p)))
            n += size
        due = [e for e in pending if e[0] <= len(log) or n >= decisions]
        if due:
            take = [due[j] for j in rng.permutation(len(due))[:int(rng.integers(1, len(due) + 1))]]
            pending = [e for e in pending if e not in take]
            ids, values = [i for _, i, _ in take], np.array([r for _, _, r in take])
            log.append(("reward", ids, values))
            ref.update(np.array([contexts[i] for i in ids]), np.array([arms[i] for i in ids]),
                       values)
    return log, arms


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def run_serve_log(log, s: HannunSection, key: bytes, *, check: bool = False,
                  deadline_s: float | None = None):
    """Run log (rewards as values) in process; returns {party: output}: p''s arms by id, and
    each feature holder's record per batch (kind, size, rounds, seconds), with the opened
    model after each reward batch when check is set ({"w": raw ring values at 2L bits,
    "b": raw at L bits, "w_inv": floats}). deadline_s: every wait's (deadline(120) if None)."""
    deadline_s = deadline(120) if deadline_s is None else deadline_s
    holders = [f"feature_holder.{i}" for i in range(s.feature_holders)]
    slices = np.array_split(np.arange(s.dims), s.feature_holders)

    def holder(i):
        def run(chan):
            eng = Engine(chan, holders, dealer=DEALER, frac_bits=s.precision_bits, trunc=s.trunc,
                         batch_first_use=False)   # as a service's holder
            state = initial_state(eng, s.arms, s.dims, s.regularizer)
            stream = ExplorationShares(chan, DEALER, s, eng.lead)
            kept, record, t = {}, [], 0
            for kind, ids, values in log:
                label = DECIDE if kind == "decide" else UPDATE
                before, t0 = chan.stats.op(label).rounds, time.perf_counter()
                if kind == "decide":
                    explore = explorations(stream, t, len(ids))
                    xs = eng.run(Op(DECIDE, _share_and_decide(
                        eng, holders, state, np.asarray(values)[:, slices[i]], i, explore)))
                    kept.update((d, xs[k]) for k, d in enumerate(ids))
                    t += len(ids)
                else:
                    xs = AShare.stack([kept.pop(d) for d in ids])
                    eng.run(Op(UPDATE, update(eng, state, xs, PULLER, REWARD)))
                entry = {"kind": kind, "size": len(ids), "seconds": time.perf_counter() - t0,
                         "rounds": chan.stats.op(label).rounds - before}
                if check and kind == "reward":
                    w, b = eng.run(Op("check", open_values(eng, [state["w"].v, state["b"].v])))
                    entry.update(w=w.view(np.int64), b=b.view(np.int64),
                                 w_inv=eng.open(state["w_inv"]))
                record.append(entry)
            eng.close()
            return record
        return run

    def puller(chan):
        eng = Engine(chan, holders, dealer=None)
        arms = {}
        for kind, ids, _ in log:
            if kind == "decide":
                arms.update(zip(ids, map(int, eng.run(Op(DECIDE, opened_arms(eng, holders[0]))))))
            else:
                eng.run(Op(UPDATE, share_choices(eng, [arms[d] for d in ids], s.arms)))
        return arms

    def reward_holder(chan):
        eng = Engine(chan, holders, dealer=None)
        for kind, _, values in log:
            if kind == "reward":
                eng.run(Op(UPDATE, share_rewards(eng, values)))
        return {}

    def dealer(chan):
        push_exploration(chan, holders, key, s)
        return serve(chan, holders, idle_s=deadline_s)

    fns = {h: holder(i) for i, h in enumerate(holders)}
    fns.update({PULLER: puller, REWARD: reward_holder, DEALER: dealer})
    return run_inproc(fns, deadline_s=deadline_s)[0]


def _share_and_decide(eng, holders, state, mine, me, explore):
    xs = yield from share_contexts(eng, holders, mine, me)
    yield from decide(eng, state, xs, explore, PULLER)
    return xs
