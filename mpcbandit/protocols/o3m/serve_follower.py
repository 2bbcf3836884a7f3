"""The parties of O3M's service (docs/serve.md, "O3M") that follow the active participant:
the passive participants, who mask their columns of each request's contexts for the AP, and
the privacy mask generator, who deals the orthogonal mask once in the service's life. Also the
mask's exchange at every start, which every participant runs.

The mask Q is drawn once: each participant keeps its block Q^p in its state folder from the
moment it gets it, and at every start tells the PMG whether it holds one (the AP also whether
it resumes a model). The PMG draws a new Q when a participant lacks its block and the AP has no
model yet (a participant saves its block before it masks anything, so a service in which one
lacks it decided nothing, unless a state folder lost it), and deals every participant a block
of the new one. A block lost while the AP holds a model, which lives in the old Q's
coordinates, is refused: nobody saves a new block.
"""

from __future__ import annotations

import logging

import numpy as np

from mpcbandit.bodies import expect_array, expect_field
from mpcbandit.crypto.orthogonal_mask import column_blocks, haar_orthogonal
from mpcbandit.errors import DataError, ProtocolError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.hannun.serve_holder import ContextStore
from mpcbandit.protocols.o3m.protocol import AP, MASK, PMG, participant_name
from mpcbandit.serve.loop import Follower, ServeContext

__all__ = ["HAS_MASK", "MASKED", "AP0", "PMG0", "own_mask", "context_store", "run_passive",
           "run_mask_generator"]

HAS_MASK = "o3m.has_mask"    # a participant tells the PMG whether it keeps its block
MASKED = "o3m.masked"        # a passive participant's masked contexts of a batch, to the AP
AP0, PMG0 = f"{AP}.0", f"{PMG}.0"
log = logging.getLogger("mpcbandit.serve")
_KEPT = "mask"               # the block's entry in a participant's checkpoint store


def own_mask(ctx: ServeContext, p: int, model: bool = False) -> np.ndarray:
    """Participant p's block Q^p (d x d_p): the one kept in its state folder, or a new one
    the PMG dealt (saved before it is used). model: the AP resumes a model (in Q's
    coordinates)."""
    s, store = ctx.section, ctx.state.store
    kept = store.path(_KEPT).exists()
    ctx.chan.send(HAS_MASK, PMG0, {"kept": kept, "model": model})
    block = ctx.chan.recv(MASK, PMG0)
    if block is None:
        if not kept:
            raise ProtocolError(PMG0, MASK, f"dealt no block to {ctx.name}, which holds none")
        return store.load(_KEPT)
    q = expect_array(block, (s.dims, s.partition[p]), PMG0, MASK)
    store.save(_KEPT, q)
    return q


def context_store(ctx: ServeContext, p: int, saved: dict) -> ContextStore:
    """Participant p's columns of each request's contexts by id: K x d_p numbers, arm by arm
    (posted to its API, read back from its log, or looked up in its data folder)."""
    s = ctx.section
    lookup = ctx.source if hasattr(ctx.source, "features_of") else None
    return ContextStore(ctx.port, lookup, s.arms * s.partition[p], **saved,
                        expire_s=ctx.config.serve.reward_timeout_s)


def masked(rows: np.ndarray, q: np.ndarray, arms: int) -> np.ndarray:
    """Q^p x^p for every arm of every row: (B, K x d_p) -> (B, K, d)."""
    return rows.reshape(len(rows), arms, q.shape[1]) @ q.T


def run_passive(ctx: ServeContext) -> str | None:
    """pp.j: for each batch the AP prepares, waits (at most its wait_s) for its columns of
    every id and sends the AP Q^j x^j of those it has; it learns no arm and no reward."""
    s, chan, port = ctx.section, ctx.chan, ctx.port
    follower = Follower(ctx, AP0)
    start, _ = follower.join()
    saved = ctx.state.load(start) if start else {"store": {}}
    q = own_mask(ctx, ctx.index)
    store = context_store(ctx, ctx.index, saved["store"])
    try:
        while True:
            op = follower.next_op()
            kind = op["kind"]
            if kind in ("prepare", "decide"):
                tag = f"serve.ops {kind} op {op.get('op')}"
                ids = expect_field(op, "ids", list, AP0, tag)
                n = expect_field(op, "op", int, AP0, tag)
                if kind == "prepare":
                    wait_s = op.get("wait_s")
                    if isinstance(wait_s, bool) or not isinstance(wait_s, (int, float)) \
                            or wait_s < 0:
                        raise ProtocolError(AP0, tag, f"wait_s {wait_s!r} is not a duration")
                    have = store.wait(ids, wait_s)
                else:    # a decision replayed at a resume: its columns are in the log
                    have = [True] * len(ids)
                rows = store.take([i for i, h in zip(ids, have) if h], n)
                before = chan.stats.total()
                chan.send(MASKED, AP0, {"have": have, "masked": masked(rows, q, s.arms)})
                cost = chan.stats.total() - before
                port.report_op("decide", cost.rounds, cost.bytes_sent)
                port.report(step=n)
            elif kind == "checkpoint":
                n = expect_field(op, "n", int, AP0, "serve.ops checkpoint")
                ctx.state.save(n, {"store": store.snapshot()})
                follower.saved(n)
            elif kind == "live":
                port.report(ready=True, reason="")
            elif kind == "stop":
                return op.get("by")
            else:
                raise ProtocolError(AP0, "serve.ops", f"unknown op {kind!r}")
    finally:
        store.close()


def _deal_masks(ctx: ServeContext) -> None:
    """Every participant says whether it keeps its block; if one does not, a new Q is drawn
    (Haar-random, from the AES PRG) and every participant gets its block of it alone."""
    s = ctx.section
    parts = [participant_name(p) for p in range(s.participants)]
    said = {p: ctx.chan.recv(HAS_MASK, p) for p in parts}
    for p, body in said.items():
        if not (isinstance(body, dict) and isinstance(body.get("kept"), bool)
                and isinstance(body.get("model"), bool)):
            raise ProtocolError(p, HAS_MASK, f"expected {{kept, model}} bools, got "
                                             f"{str(body)[:60]}")
    kept = {p: body["kept"] for p, body in said.items()}
    if all(kept.values()):
        ctx.chan.exchange(MASK, send=dict.fromkeys(parts))
        log.info("every participant keeps its block of the mask: none dealt")
        return
    if said[AP0]["model"]:
        lost = ", ".join(p for p, has in kept.items() if not has)
        raise DataError(f"{lost} lost its block of the mask (its state folder's checkpoints/"
                        f"{_KEPT}.ckpt), and {AP0} resumes a model in that mask's coordinates: "
                        "a new mask cannot serve it. Restore the block from a backup of the "
                        "state folder, or start a new service")
    blocks = column_blocks(haar_orthogonal(s.dims, Prg()), s.partition)
    ctx.chan.exchange(MASK, send={p: blocks[k] for k, p in enumerate(parts)})
    log.info("dealt a new mask (d = %d) to %s (%s kept none)", s.dims, ", ".join(parts),
             ", ".join(p for p, has in kept.items() if not has))


def run_mask_generator(ctx: ServeContext) -> str | None:
    """pmg.0: deals the mask (when a participant lacks its block), then only checkpoints with
    the others and stops with them: it hears of no request."""
    follower = Follower(ctx, AP0)
    follower.join()
    _deal_masks(ctx)
    ctx.port.report(ready=True, reason="")
    while True:
        op = follower.next_op()
        if op["kind"] == "checkpoint":
            n = expect_field(op, "n", int, AP0, "serve.ops checkpoint")
            ctx.state.save(n, {})
            follower.saved(n)
        elif op["kind"] == "stop":
            return op.get("by")
        elif op["kind"] != "live":
            raise ProtocolError(AP0, "serve.ops", f"unknown op {op['kind']!r} for the PMG")
