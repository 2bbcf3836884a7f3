"""Hannun's bandit served online (issue 47), on shares: decisions and reward updates decoupled
and batched. Op chains for the feature holders (the computing parties) and the parts p' and
p'' play; the serve loop decides when a batch closes, keeps each decision's [x] until its
reward and applies the batches in its log's order.

Decisions: B contexts in one set of rounds, the same as one decision of ``hannun._step``'s
select chain (arrays B times larger): u = W^-1 x for every arm and row (W^-1's triangle opened
once) with (1 - y) b, the exact score with u's truncation in its round, the lex argmax with
the dealer's permutation, the one-hots opened to p' alone. 1 + 1 + 1 + (7 + ceil(log2(A-1)))
+ 1 rounds, plus 1 to share the contexts.

Rewards: W_a and b_a are kept exactly (W at 2L bits: o x x^T and o r x are exact products of
integers o, r and L-bit x), and W_a^-1 is refreshed by scaled Newton–Schulz from the running
inverse (``serve_reference.newton_schulz_schedule``): 3 + 4 K(R) rounds per batch of R,
K(1) = 4, K(16) = 6, K(256) = 8. docs/serve.md "How the batched update works".
"""

from __future__ import annotations

import numpy as np

from mpcbandit.errors import ConfigError, DataError, ProtocolError
from mpcbandit.mpc import arith, compare, symmetric, truncation
from mpcbandit.mpc.rounds import gather
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.truncated_product import mul_truncated
from mpcbandit.protocols.hannun.serve_reference import SCALE_BITS, chunks, newton_schulz_schedule
from mpcbandit.protocols.hannun.stream import ExplorationShares

__all__ = ["DECIDE", "UPDATE", "MAX_SERVE_BITS", "initial_state", "share_contexts",
           "score_prefix", "open_choice", "explorations", "decide", "opened_arms", "update",
           "share_choices", "share_rewards"]

DECIDE, UPDATE = "serve.decide", "serve.update"   # labels: every party of a batch uses them
#: the refresh truncates c X W X at 2L + SCALE_BITS bits, inside the exact truncation's
#: 2^62 with |value| < 16: L <= 20
MAX_SERVE_BITS = (58 - SCALE_BITS) // 2


def initial_state(eng, arms: int, dims: int, regularizer: float = 0.0) -> dict[str, AShare]:
    """Alg. 1 lines 1-3 as public constants: W_a = (1 + reg) I at 2L bits, its inverse at L
    bits, b_a = 0. Refuses an engine the refresh cannot run on (named by the config key)."""
    if eng.trunc != "exact":
        raise ConfigError("hannun.trunc", f"serving needs exact truncation, not {eng.trunc!r}: "
                          "the refresh truncates values of 2L + 18 bits, which any other mode "
                          "wraps about once in 2^6 elements")
    if eng.frac > MAX_SERVE_BITS:
        raise ConfigError("hannun.precision_bits", f"serving takes at most {MAX_SERVE_BITS} "
                          f"bits, not {eng.frac}: the refresh keeps 2L + {SCALE_BITS} bits")
    eye = np.repeat(np.eye(dims)[None], arms, axis=0)
    return {"w": eng.public(eye * (1.0 + regularizer), frac=2 * eng.frac),
            "w_inv": eng.public(eye / (1.0 + regularizer)), "b": eng.zeros((arms, dims))}


def share_contexts(eng, holders: list[str], mine: np.ndarray, me: int):
    """Steps 6-7: every feature holder shares its slice of the context (D_i,) or of a batch of
    them (B, D_i) in one round; [x] is their concatenation along the features."""
    parts = yield from gather([arith.input_value(eng, mine if i == me else None, p, eng.frac)
                               for i, p in enumerate(holders)])
    return AShare.concat(parts, axis=-1)


def score_prefix(eng, state: dict, x: AShare, y: AShare):
    """Steps 10-11 in one round: u = W_a^-1 x untruncated (2L bits) and (1 - y) b_a, for one
    context (D,) with its y (): u, b1 (A, D); or for a batch (B, D), (B,): (B, A, D) each."""
    A, D = state["b"].shape
    u, b1 = yield from gather([symmetric.matvec(eng, state["w_inv"], x, rescale=False),
                               arith.bilinear(eng, "matmul", (1 - y).reshape(-1, 1),
                                              state["b"].reshape(1, A * D))])
    return u, b1.reshape(*x.shape[:-1], A, D)


def open_choice(eng, b1: AShare, u: AShare, yv: AShare, gamma: AShare, to: str):
    """Steps 11-16: exact DP scores (u's truncation inside the product's round), the argmax
    with the random tie-break, its one-hot (per row of a batch) opened to `to` alone."""
    prod = yield from mul_truncated(eng, b1, u, u.frac - eng.frac)     # 11: exact, 2L bits
    score = prod.sum(axis=-1) + yv                                      # 13: (1-y) s + y v
    onehot = yield from compare.argmax(eng, score, "lex", permutation=gamma)  # 14-15
    yield from arith.open_to(eng, onehot, to)                           # 16: to alone


def explorations(stream: ExplorationShares, t: int, count: int) -> tuple[AShare, AShare, AShare]:
    """The exploration items of decisions t..t+count-1: [y] (B,), [y v] (B, A), [gamma] (B, A)."""
    items = [stream.next(i) for i in range(t, t + count)]
    return tuple(AShare.stack([it[k] for it in items]) for k in range(3))


def decide(eng, state: dict, xs: AShare, explore: tuple, puller: str):
    """A batch of decisions on [X] (B, D) with their exploration items: the B arms opened to
    p' alone, in one decision's rounds."""
    y, yv, gamma = explore
    u, b1 = yield from score_prefix(eng, state, xs, y)
    yield from open_choice(eng, b1, u, yv, gamma, puller)


def opened_arms(eng, sender: str):
    """p''s part of ``decide``: the arms of the batch, from the one-hots opened to it alone."""
    opened = np.rint((yield from arith.open_to(eng, None, eng.me)))
    hot = opened == 1
    if opened.ndim != 2 or not np.all(hot | (opened == 0)) or not np.all(hot.sum(axis=1) == 1):
        raise ProtocolError(sender, DECIDE, f"opened selection is not one-hot in every row: "
                            f"{opened.tolist()}")
    return np.argmax(hot, axis=1)


def _expect_shape(x: AShare, shape: tuple, owner: str, what: str) -> None:
    if x.shape != shape:
        raise ProtocolError(owner, UPDATE, f"{what} of shape {x.shape}, expected {shape}")


def update(eng, state: dict, xs: AShare, puller: str, reward_holder: str):
    """A batch of R rewards of past decisions, [X] (R, D) kept from their decisions: p' shares
    their one-hots, p'' the rewards; W_a += Σ o x x^T and b_a += Σ o r x exactly, then W_a^-1
    refreshed by scaled Newton–Schulz from the running inverse, one refresh per chunk of
    MAX_REWARDS. The state changes only once every round has run."""
    R, (A, D) = xs.shape[0], state["b"].shape
    if R == 0:
        raise ValueError("update: a batch of no rewards (there is nothing to apply)")
    L = eng.frac
    o, r, xx = yield from gather([arith.input_value(eng, None, puller, 0),
                                  arith.input_value(eng, None, reward_holder, 0),
                                  arith.bilinear(eng, "outer_upper", xs, xs, rescale=False)])
    _expect_shape(o, (R, A), puller, "one-hots")
    _expect_shape(r, (R,), reward_holder, "rewards")
    parts = chunks(R)
    *added, weighted = yield from gather(
        [arith.bilinear(eng, "matmul", o[p].T, xx[p], rescale=False) for p in parts]
        + [arith.bilinear(eng, "mul", o, r.reshape(R, 1), rescale=False)])   # integers: exact
    ws = []
    for dw in added:   # W after each chunk, exact at 2L bits
        ws.append((ws[-1] if ws else state["w"]) + symmetric.mirror(dw, D))
    *floors, db = yield from gather([truncation.truncate(eng, symmetric.upper(w), L) for w in ws]
                                    + [arith.bilinear(eng, "matmul", weighted.T, xs, rescale=False)])
    x = state["w_inv"]
    for p, w_floor in zip(parts, floors):
        x = yield from _refresh(eng, symmetric.mirror(w_floor, D), x,
                                newton_schulz_schedule(p.stop - p.start, L))
    state.update(w=ws[-1], b=state["b"] + db, w_inv=x)


def _refresh(eng, w: AShare, x: AShare, steps: list[tuple[float, float]]):
    """X <- c1 X - c2 X W X per step (4 rounds: two products, each truncated once), kept
    symmetric share by share: the triangle is truncated and mirrored."""
    L, S, D = eng.frac, SCALE_BITS, w.shape[-1]
    for c1, c2 in steps:
        p = yield from arith.bilinear(eng, "matmul", w, x)                  # W X, L bits
        q = yield from arith.bilinear(eng, "matmul", x, p, rescale=False)   # X W X, 2L bits
        k1, k2 = (np.uint64(round(c * 2 ** S)) for c in (c1, c2))
        scaled = AShare((x.v * k1) << np.uint64(L), 2 * L + S, x.lead)      # c1 X
        t = scaled - AShare(q.v * k2, 2 * L + S, x.lead)                     # - c2 X W X
        x = symmetric.mirror((yield from truncation.truncate(eng, symmetric.upper(t), L + S)), D)
    return x


def share_choices(eng, arms: np.ndarray, arm_count: int):
    """p''s part of ``update``: the one-hots (R, A) of the rewarded decisions' arms."""
    return (yield from arith.input_value(eng, np.eye(arm_count)[np.asarray(arms)], eng.me, 0))


def share_rewards(eng, rewards: np.ndarray):
    """p'''s part of ``update``: the rewards, shared as integers; Hannun's are 0 or 1 (the
    score bound the argmax's range rests on)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    bad = np.flatnonzero((rewards != 0) & (rewards != 1))
    if bad.size:
        raise DataError(f"{eng.me}: reward {float(rewards[bad[0]])!r} at position {bad[0]} of the "
                        f"batch: Hannun's rewards are 0 or 1 ({bad.size} of {rewards.size} are not)")
    return (yield from arith.input_value(eng, rewards, eng.me, 0))
