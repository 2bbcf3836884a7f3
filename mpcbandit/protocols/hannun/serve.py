"""Hannun et al.'s bandit as a service (`mpcbandit serve`, docs/serve.md): the parties, what
each one's API takes, and the serve loops of p' (who orders every op), p'' and the dealer (the
feature holders' is in serve_holder.py). The maths of a batch is ops.py's.

p' takes a batch of decision requests from its queue and asks the holders to prepare it
(``prepare``: each waits, bounded by what is left of serve.decision_timeout_s, for its slices);
the ids every holder has are decided in one batch, the rest refused naming the missing
holders. p'' tells p' which decisions have their reward (ids only); p' applies them, at most
serve.max_update a batch, beside or after decision batches, in the order p'' reported them.
p'' reports a decision closed without a reward (serve.reward_timeout_s), and p' drops it.
"""

from __future__ import annotations

import logging

import numpy as np

from mpcbandit.config import Config
from mpcbandit.data import hannun_data
from mpcbandit.data.folder import no_data
from mpcbandit.errors import DataError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.rounds import Op
from mpcbandit.protocols.hannun.protocol import DEALER, FEATURE, PULLER, REWARD, holders
from mpcbandit.protocols.hannun.ops import UPDATE, share_rewards
from mpcbandit.protocols.hannun.serve_holder import DEALER as DEALER0, DEALER_LABEL
from mpcbandit.protocols.hannun.serve_holder import PULLER as P1, REWARD as P2, run_holder
from mpcbandit.protocols.hannun.serve_puller import Puller
from mpcbandit.protocols.hannun.serve_keys import ServiceKeys
from mpcbandit.protocols.hannun.serve_replay import replay_service
from mpcbandit.protocols.hannun.stream import ExplorationPusher
from mpcbandit.serve.loop import POLL_S, UP, Follower, ServeContext
from mpcbandit.serve.backend import Closed
from mpcbandit.serve.service import ServiceRole

__all__ = ["SERVE", "roles", "peers", "service_role", "source", "run_role"]

log = logging.getLogger("mpcbandit.serve")


def roles(s) -> list[tuple[str, int]]:
    """The parties of the service: Hannun's without the environment (the world is the
    applications)."""
    return [(FEATURE, i) for i in range(s.feature_holders)] + [(PULLER, 0), (REWARD, 0),
                                                                (DEALER, 0)]


def peers(s, role: str, index: int) -> list[str]:
    """Who talks to whom: the batch run's links, p' with p'' (ids of decisions and rewards)
    and with the dealer (which tells p' when it stops)."""
    fh = holders(s)
    me = f"{role}.{index}"
    return {FEATURE: [h for h in fh if h != me] + [P1, P2, DEALER0], PULLER: fh + [P2, DEALER0],
            REWARD: fh + [P1], DEALER: fh + [P1]}[role]


def service_role(cfg: Config, role: str, index: int) -> ServiceRole:
    """What each party's API takes: a holder its slice (norm <= 1, scaled by the holder as
    hannun.norms says), p' decisions, p'' rewards (0 or 1), the dealer nothing."""
    name, s = f"{role}.{index}", cfg.section
    if role == FEATURE:
        width = len(hannun_data.feature_slices(s)[index])
        n = s.feature_holders
        why = ("Hannun's bound is on the WHOLE context, all holders' slices together: "
               + (f"this holder multiplies each slice by 1/sqrt({n}) so that any {n} "
                  "slices of norm <= 1 make a context within it; post your slice divided by "
                  "the largest norm your slices reach" if s.norms != "promise" else
                  "hannun.norms = 'promise', the holders promise it jointly, unchecked; "
                  "scale the whole context to norm <= 1 before splitting it"))
        return ServiceRole(name, features=width, max_norm=1.0, norm_rule=why)
    return ServiceRole(name, decides=role == PULLER, rewards=role == REWARD,
                       reward_values=(0.0, 1.0) if role == REWARD else ())


def source(cfg: Config, role: str, index: int, folder):
    """A holder looks slices up by id in its folder (if given); the others read no data."""
    name = f"{role}.{index}"
    if role == FEATURE:
        hannun_data.warn_promise(cfg.section, name)
    if role == FEATURE and folder is not None:
        return hannun_data.lookup(cfg, index, folder, name)
    return no_data(folder, name)


def _reward_holder(ctx: ServeContext) -> str | None:
    """p'': shares the rewards of the batches p' orders; tells p' which ids have a reward
    (or were closed), in the order of its log."""
    chan, port = ctx.chan, ctx.port
    eng = Engine(chan, holders(ctx.section), dealer=None)
    follower = Follower(ctx, P1)
    start, _ = follower.join()
    saved = ctx.state.load(start) if start else {"consumed": 0, "unapplied": []}
    unapplied = dict(saved["unapplied"])   # id -> "reward" | "expired", reported, not applied
    # one walk of the log (read, not held): the rewards and closings not reported before the
    # checkpoint (the backlog), the rewards of those and of the ones reported but not applied
    # (what is left to apply), and the decided ids
    backlog, rewards, decided, seen = [], {}, set(), 0
    for r in port.records:
        kind = r.get("kind")
        if kind == "decided":
            decided.add(r["id"])
        elif kind in ("reward", "expired"):
            late = seen >= saved["consumed"]
            seen += 1
            if late:
                backlog.append({"id": r["id"], "kind": kind})
            if kind == "reward" and (late or r["id"] in unapplied):
                rewards[r["id"]] = r["reward"]
    replayed: set[str] = set()   # applied by the ops replayed at this start
    consumed, live = saved["consumed"] + len(backlog), False

    def notify(items) -> None:
        new = {r["id"]: r["kind"] for r in items}
        unapplied.update(new)
        ready = [i for i, kind in new.items() if kind == "reward"]
        closed = [i for i, kind in new.items() if kind == "expired"]
        if ready or closed:
            chan.send(UP, P1, {"ready": ready, "closed": closed})

    while True:
        op = follower.next_op(wait_s=POLL_S)
        kind = op and op["kind"]
        if kind in ("decide", "decided"):   # replayed (numbered), or a batch served live
            port.decided([i for i in op["ids"] if i not in decided])
        elif kind in ("update", "drop"):
            ids = op["ids"]
            if kind == "update":
                missing = [i for i in ids if i not in rewards]
                if missing:
                    raise DataError(f"op {op['n']}: no reward for id {missing[0]!r} in "
                                    f"{ctx.state.wal_path}")
                eng.run(Op(UPDATE, share_rewards(eng, np.array([rewards.pop(i) for i in ids]))))
            for i in ids:
                unapplied.pop(i, None)
                rewards.pop(i, None)
                if not live:
                    replayed.add(i)
        elif kind == "checkpoint":
            ctx.state.save(op["n"], {"consumed": consumed, "unapplied": list(unapplied.items())})
            follower.saved(op["n"])
        elif kind == "live":   # replay done: what was reported before the restart, again
            again = [{"id": i, "kind": k} for i, k in unapplied.items()]
            notify(again + [r for r in backlog if r["id"] not in unapplied
                            and r["id"] not in replayed])
            live, decided, backlog, replayed = True, set(), [], set()
            port.report(ready=True, reason="")
        elif kind == "stop":
            return op.get("by")
        if op:
            port.report(step=follower.n)
        if live and (batch := port.next_batch("rewards", window_s=0.0, wait_s=0.0)):
            items = []
            for item in batch.items:
                if not isinstance(item, Closed):
                    rewards[item.id] = item.reward
                items.append({"kind": "expired" if isinstance(item, Closed) else "reward",
                              "id": item.id})
            consumed += len(items)
            notify(items)


def _dealer(ctx: ServeContext) -> str | None:
    """Serves the holders' material and pushes the exploration stream as it is used; its keys
    (ServiceKeys, in its state folder) are revealed as hannun.reveal says: never, at each stop
    (a fresh key drawn for what follows), or each key once its decisions are decided."""
    from dealer.service import MaterialServer

    s, chan = ctx.section, ctx.chan
    fh = holders(s)
    keys = ServiceKeys(ctx.state, s, ctx.config.seed)
    # a service runs for months: no budget of elements (a batch run's bounds a runaway run)
    server = MaterialServer(chan, fh, max_elements=2**63 - 1)
    pusher, left, by = None, False, None
    while server.waiting:
        got = chan.poll(DEALER_LABEL, server.waiting, POLL_S)
        if got is None:
            if ctx.stopping and not left:
                chan.send(UP, P1, {"leave": "stopped (SIGTERM)"})
                left = True
            continue
        peer, msg = got
        if "explore_from" in msg:
            pusher = ExplorationPusher(chan, fh, s, keys.schedule, int(msg["explore_from"]))
            ctx.port.report(ready=True, reason="")
        elif "explore_at" in msg and pusher is not None:
            pusher.acked(int(msg["explore_at"]))
            # the dealer sees no op: its step is where the holders are in the stream
            ctx.port.report(step=int(msg["explore_at"]))
        elif "explore_decided" in msg:   # every decision before it is decided
            keys.decided(int(msg["explore_decided"]))
        elif "explore_stop" in msg:
            by = msg.get("by")
            log.info("%s", keys.stopped(int(msg["explore_stop"])))
        else:
            server.handle(peer, msg)
    log.info("served %(batches)d batches of material, %(elements)d elements", server.counts())
    return by


def run_role(ctx: ServeContext) -> str | None:
    """Run ctx's role in the service; the party that stopped it (None: this one)."""
    if ctx.role == FEATURE:
        return run_holder(ctx, holders(ctx.section))
    if ctx.role == PULLER:
        return Puller(ctx).run()
    return {REWARD: _reward_holder, DEALER: _dealer}[ctx.role](ctx)


#: what serve_replay.replay_service reads of each role's state folder: (required, if present);
#: `serve-bundle` copies exactly these (the dealer's result.json holds only revealed keys)
REPLAY_READS = {FEATURE: (("requests.wal",), ()), PULLER: (("requests.wal", "ops.wal"), ()),
                REWARD: (("requests.wal",), ()), DEALER: ((), ("result.json",))}

SERVE = {"roles": roles, "peers": peers, "service_role": service_role, "source": source,
         "run_role": run_role, "replay": replay_service, "replay_reads": REPLAY_READS}
