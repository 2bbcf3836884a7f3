"""O3M (Cao et al. 2023) as a service (`mpcbandit serve`, docs/serve.md, "O3M"): the parties,
what each one's API takes, and the active participant's serve loop, which orders every op
(the passive participants' and the PMG's are in serve_follower.py).

The AP is the paper's participant 1: it recommends and it holds the users' feedback, so its
application posts its own columns, asks for the decisions and posts the rewards; every
passive participant's application posts its columns. The AP takes a batch of decision
requests from its queue and asks the passive participants to prepare it (each waits, bounded
by what is left of serve.decision_timeout_s, for its columns, and sends Q^j x^j of those it
has: one round); the ids every participant has are decided in one batch (LinUCB or LinTS on
the masked sums, row by row, in the batch's order, on the model as it stands), the rest
refused naming the missing participants. After each decision batch the AP applies at most one
batch of rewards, serve.max_update at most, in the order of its log (sequential
Sherman-Morrison on the masked context of the arm served); a decision closed without a reward
(serve.reward_timeout_s) is dropped.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from mpcbandit.bandits.linear import LinearBandit
from mpcbandit.bodies import expect_array
from mpcbandit.config import Config
from mpcbandit.data import o3m_data
from mpcbandit.data.folder import no_data
from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.protocols import seeded_rng
from mpcbandit.protocols.o3m.protocol import AP, PMG, PP, TS_PURPOSE, choose_arm, participant_name
from mpcbandit.protocols.o3m.serve_follower import (AP0, MASKED, PMG0, context_store, masked,
                                                    own_mask, run_mask_generator, run_passive)
from mpcbandit.protocols.o3m.serve_replay import replay_service
from mpcbandit.serve.leader import Leader
from mpcbandit.serve.loop import OPS, ServeContext, durable
from mpcbandit.serve.backend import Closed
from mpcbandit.serve.service import ServiceRole

__all__ = ["SERVE", "roles", "peers", "service_role", "source", "run_role"]

log = logging.getLogger("mpcbandit.serve")


def roles(s) -> list[tuple[str, int]]:
    """The parties of the service: O3M's without the environment (the world is the
    applications)."""
    return [(PMG, 0), (AP, 0)] + [(PP, j) for j in range(1, s.participants)]


def peers(s, role: str, index: int) -> list[str]:
    """The batch run's links: the PMG with every participant, the AP with every passive one."""
    passive = [participant_name(p) for p in range(1, s.participants)]
    return {PMG: [AP0, *passive], AP: [PMG0, *passive], PP: [PMG0, AP0]}[role]


def service_role(cfg: Config, role: str, index: int) -> ServiceRole:
    """What each party's API takes: a participant its K x d_p columns (arm by arm), the AP
    also decisions and rewards (every value within o3m.max_value), the PMG nothing."""
    s = cfg.section
    name = f"{role}.{index}"
    if role == PMG:
        return ServiceRole(name)
    width = s.arms * s.partition[index if role == PP else 0]
    return ServiceRole(name, features=width, decides=role == AP, rewards=role == AP,
                       max_abs=s.max_value)


def source(cfg: Config, role: str, index: int, folder):
    """A participant looks its columns up by id in its folder (if given); the PMG reads none."""
    name = f"{role}.{index}"
    if role in (AP, PP) and folder is not None:
        return o3m_data.lookup(cfg, index if role == PP else 0, folder, name)
    return no_data(folder, name)


class _Active(Leader):
    """ap.0: orders every op of the service, decides on the masked contexts, learns the arms
    and the rewards."""

    def __init__(self, ctx: ServeContext):
        s = ctx.section
        self.s, self.passive = s, [participant_name(p) for p in range(1, s.participants)]
        followers = [PMG0, *self.passive]
        super().__init__(ctx, followers, followers)
        start = self.agree()
        self.bandit = LinearBandit(s.dims, s.lam)
        self.sampler = seeded_rng(ctx.config.seed, TS_PURPOSE)
        #: id -> the masked context of the arm served, until its reward (or closing) is applied
        self.pending: dict[str, np.ndarray] = {}
        self.t, store = 0, {}
        if start:
            saved = ctx.state.load(start)
            self.bandit.v_inv, self.bandit.b = saved["v_inv"], saved["b"]
            self.sampler.bit_generator.state = saved["sampler"]
            self.pending = dict(zip(saved["pending_ids"], saved["pending_rows"]))
            self.t, store = saved["t"], saved["store"]
        self.q = own_mask(ctx, 0, model=bool(start))
        self.store = context_store(ctx, 0, store)
        records = self.port.records
        #: rewards by id, until applied: the log's, then the queue's
        self.reward_of = {r["id"]: r["reward"] for r in records if r.get("kind") == "reward"}
        self.replay(start, lambda: len(self.pending))
        # the log's rewards applied before this start are not kept: only those still to apply
        self.reward_of = {i: r for i, r in self.reward_of.items() if i in self.pending}
        self.note([(r["id"], r["kind"] == "reward") for r in records
                   if r.get("kind") in ("reward", "expired")])

    # ------------------------------------------------------------ the rewards it holds
    def note(self, items) -> None:
        """Rewards (True) and closings (False) to apply, by id, in the order given."""
        for rid, rewarded in items:
            if rid in self.pending:   # a decision replayed as closed is applied once
                (self.ready if rewarded else self.closing)[rid] = None

    def take_rewards(self) -> None:
        """The rewards and closings the shell queued since (in its log's order)."""
        while batch := self.port.next_batch("rewards", window_s=0.0, wait_s=0.0):
            rewarded = [(item.id, not isinstance(item, Closed)) for item in batch.items]
            self.reward_of.update((item.id, item.reward) for item in batch.items
                                  if not isinstance(item, Closed))
            self.note(rewarded)

    def settle(self) -> None:
        """At a stop: every reward and closing taken is applied."""
        self.take_rewards()
        while self.ready or self.closing:
            self.pending_rewards()

    # ------------------------------------------------------------ ops
    def _masked_of(self, ids: list[str], n: int) -> tuple[list[list[bool]], list[np.ndarray]]:
        """Each passive participant's answer to op n: which ids it has, Q^j x^j of those."""
        tag = f"{MASKED} op {n}"
        wait_s = self.serve.decision_timeout_s + self.ctx.config.run.deadline_s
        got = self.chan.exchange(MASKED, recv=self.passive, deadline_s=wait_s)
        flags, arrays = [], []
        for p in self.passive:
            body = got[p]
            have = body.get("have") if isinstance(body, dict) else None
            if not isinstance(have, list) or len(have) != len(ids) or not all(
                    isinstance(h, bool) for h in have):
                raise ProtocolError(p, tag, f"expected {len(ids)} bools (which columns it "
                                            f"has), got {str(body)[:80]}")
            flags.append(have)
            arrays.append(expect_array(body.get("masked"), (sum(have), self.s.arms,
                                                            self.s.dims), p, tag))
        return flags, arrays

    def prepare(self, batch) -> None:
        """A batch of tickets: the ids every participant has are decided, the rest refused."""
        cost = self.chan.stats.total(), time.perf_counter()
        tickets = batch.items
        ids, n = [t.id for t in tickets], self.oplog.n + 1
        wait_s = self.slices_wait(batch)
        self.chan.exchange(OPS, send={p: {"kind": "prepare", "op": n, "ids": ids,
                                          "wait_s": wait_s} for p in self.passive})
        mine = self.store.wait(ids, wait_s)
        flags, arrays = self._masked_of(ids, n)
        words_s = time.perf_counter() - cost[1]
        own = self.store.take([i for i, h in zip(ids, mine) if h], n)
        rows = {p: iter(a) for p, a in zip(self.passive, arrays)}
        own_rows = iter(masked(own, self.q, self.s.arms))
        complete, sums = [], []
        for k, ticket in enumerate(tickets):
            parts = [next(own_rows) if mine[k] else None] + [
                next(rows[p]) if f[k] else None for p, f in zip(self.passive, flags)]
            missing = [name for name, part in zip([AP0, *self.passive], parts) if part is None]
            if missing:
                self.refuse(ticket, missing, "columns")
            else:
                complete.append(ticket)
                sums.append(sum(parts))
        if complete:
            self.port.report_stage("words", words_s, len(complete))
            self.decide([t.id for t in complete], n, tickets=complete, contexts=np.array(sums),
                        cost=cost)
        if len(complete) < len(tickets):
            log.info("decision batch #%d: %d refused (columns missing)", batch.number,
                     len(tickets) - len(complete))

    def decide(self, ids: list[str], n: int, tickets=None, *, contexts=None,
               cost=None) -> None:
        """Decide ids on the model as it stands, in their order (op n); a replayed op asks the
        passive participants for the columns again and must give the arms logged. cost: the
        counters at the start of the op's rounds (its prepare)."""
        before, t0 = cost or (self.chan.stats.total(), time.perf_counter())
        started = time.perf_counter()
        if contexts is None:   # replayed at a resume: every participant has the columns
            self.chan.exchange(OPS, send={p: {"kind": "decide", "op": n, "ids": ids}
                                          for p in self.passive})
            _, arrays = self._masked_of(ids, n)
            contexts = masked(self.store.take(ids, n), self.q, self.s.arms) + sum(arrays)
        fut = None if self.replaying else self.oplog.append("decide", ids)
        arms = [choose_arm(self.bandit, x, self.s, self.sampler) for x in contexts]
        if fut is not None:
            durable(fut)
        self.t += len(ids)
        for k, (rid, arm) in enumerate(zip(ids, arms)):
            self.pending[rid] = contexts[k, arm]
        if tickets is not None:
            self.port.report_stage("rounds", time.perf_counter() - started, len(tickets))
        self.settle_decisions(ids, arms, n, tickets)
        self.op_done(n, "decide", len(ids), before, t0)

    def update(self, ids: list[str], n: int) -> None:
        """Apply the rewards of ids in their order; the op is logged with the new |theta|
        (a replay's check), before the model serves another decision."""
        before, t0 = self.chan.stats.total(), time.perf_counter()
        missing = [i for i in ids if i not in self.reward_of]
        if missing:
            raise DataError(f"op {n}: no reward for id {missing[0]!r} in "
                            f"{self.ctx.state.wal_path}")
        for rid in ids:
            self.bandit.update(self.pending.pop(rid), self.reward_of.pop(rid))
        norm = float(np.linalg.norm(self.bandit.theta))
        if not self.replaying:
            durable(self.oplog.append("update", ids, theta_norm=norm))
        elif abs(norm - (logged := self.replayed.get("theta_norm", norm))) > \
                1e-9 * max(1.0, norm):
            raise DataError(f"op {n} replayed: |theta| {norm!r}, the op log says {logged!r}: "
                            "the replay differs")
        self.op_done(n, "update", len(ids), before, t0)

    def drop(self, ids: list[str], n: int) -> None:
        before, t0 = self.chan.stats.total(), time.perf_counter()
        if not self.replaying:
            durable(self.oplog.append("drop", ids))
        for i in ids:
            self.pending.pop(i, None)
        self.op_done(n, "drop", len(ids), before, t0)

    def state(self) -> dict:
        ids = list(self.pending)
        return {"v_inv": self.bandit.v_inv, "b": self.bandit.b, "t": self.t,
                "sampler": self.sampler.bit_generator.state, "store": self.store.snapshot(),
                "pending_ids": ids, "pending_rows": np.array([self.pending[i] for i in ids]
                                                             ).reshape(len(ids), self.s.dims)}

    def run(self) -> str | None:
        try:
            return super().run()
        finally:
            self.store.close()


def run_role(ctx: ServeContext) -> str | None:
    """Run ctx's role in the service; the party that stopped it (None: this one)."""
    if ctx.role == AP:
        return _Active(ctx).run()
    return {PP: run_passive, PMG: run_mask_generator}[ctx.role](ctx)


#: what serve_replay.replay_service reads of each role's state folder: (required, if present);
#: `serve-bundle` copies exactly these (never a participant's block of the mask)
REPLAY_READS = {AP: (("requests.wal", "ops.wal"), ()), PP: (("requests.wal",), ()), PMG: ((), ())}

SERVE = {"roles": roles, "peers": peers, "service_role": service_role, "source": source,
         "run_role": run_role, "replay": replay_service, "replay_reads": REPLAY_READS}
