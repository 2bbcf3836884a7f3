"""Hannun et al. 2019, Algorithm 1: a privacy-preserving epsilon-greedy contextual bandit.

Parties (each its own process):
  feature_holder.0..n-1  own a slice of the D context features each; hold the shares of
                         W_a^{-1}, b_a and compute on them (the paper's set P);
  arm_puller.0           p': learns a_t (opened to it alone), pulls the arm in the
                         environment, shares o_t;
  environment.0          the world the arm is pulled in: receives a_t from p', delivers the
                         reward r_t to p'' alone;
  reward_holder.0        p'': receives r_t and shares it; learns nothing else;
  dealer.0               correlated randomness (the engine's), and the exploration stream:
                         y_t ~ Bernoulli(eps), v_t ~ Uniform(0,1)^A, the tie-break permutation.

Round schedule of one step t (``_step``; docs/hannun.md "One step"): the prefix u = W^{-1} x,
untruncated, and (1 - y) b (1), then in lock-step the select chain (score, u's exact truncation
in the product's round; argmax, one-hot to p', [o_t] and [r_t]), the eq. 1 chain (1 + x^T u
the same way, reciprocal, q u u^T in one product, one truncation) and the next context, then
one round of exact products with o_a.

Scores are exact where the paper's ties live: b_a is exact (integer o, r times x), and
s_a = b_a^T (W_a^{-1} x) is a product WITHOUT truncation, kept at 2L fractional bits, so an
arm never rewarded scores exactly 0, as in float64, and ties break by the same permutation
(w_a^T x = b_a^T W_a^{-1} x because W_a^{-1} is symmetric).

Rewards (Alg. 1 line 19): the environment alone learns a_t besides p' (the world the arm is
pulled in must), and only the pulled arm's reward leaves it, to p''. Nobody needs the rewards
of arms that were not pulled.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import numpy as np

from dealer import serve
from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.bodies import expect_index, expect_real
from mpcbandit.config import Config, spec
from mpcbandit.data import hannun_data
from mpcbandit.data.folder import no_data
from mpcbandit.data.hannun_data import NORM_RULES, feature_slices
from mpcbandit.data.tasks import MNIST_TRAIN_SIZE, TASKS, linear_arm_dims, require_mnist
from mpcbandit.errors import ConfigError, ProtocolError
from mpcbandit.mpc import arith, compare, functions, symmetric
from mpcbandit.mpc.engine import TRUNC_CHOICES, Engine
from mpcbandit.mpc.provider import engine_ahead_bytes
from mpcbandit.mpc.rounds import Op, gather
from mpcbandit.mpc.shares import AShare
from mpcbandit.mpc.truncated_product import mul_truncated
from mpcbandit.protocols import MESSAGE_OVERHEAD, PartyContext, Protocol, read_folders
from mpcbandit.protocols.hannun.ops import open_choice, score_prefix, share_contexts
from mpcbandit.protocols.hannun.reference import (
    headline,
    outcome_of,
    plaintext,
    replay,
    replay_run,
    task,
)
from mpcbandit.protocols.hannun.stream import BLOCK, ExplorationShares, push_exploration

FEATURE, PULLER, REWARD, DEALER = "feature_holder", "arm_puller", "reward_holder", "dealer"
ENV = "environment"
ONLINE = "hannun"       # label of every online round: their count per step is the critical path
PULL, DELIVER = "pull", "deliver"   # a_t from p' to the environment; r_t from it to p''


@dataclass(frozen=True)
class HannunSection:
    """[hannun]: the bandit, its data, the fixed-point/Newton settings and §7's options."""

    feature_holders: int = spec(2, min=2, max=16, doc="parties P_1..P_n holding features (n >= 2)")
    arms: int = spec(10, min=2, max=1000, doc="|A|")
    dims: int = spec(20, min=1, max=784, doc="D, context features in total")
    iterations: int = spec(1000, min=1, max=10_000_000, doc="T")
    epsilon: float = spec(0.1, min=0.0, max=1.0, doc="exploration probability")
    precision_bits: int = spec(20, min=8, max=26, doc="L: fixed-point fractional bits")
    newton_iterations: int = spec(3, min=1, max=30, doc="Newton-Raphson steps of the reciprocal "
                                  "(3 reach 2^-32 from the linear start; the paper's needs 7)")
    data: str = spec("synthetic", choices=TASKS, doc="synthetic | mnist | kmeans | linear (D = |A| d)")
    data_dir: str = spec("", local=True, doc="MNIST IDX directory (default: $MPCBANDIT_DATA or ../shared/data/mnist)")
    sigma: float = spec(0.5, min=1e-3, doc="kernel width of the kmeans task's rewards")
    norms: str = spec("auto", choices=NORM_RULES, doc="the WHOLE context's ||x_t|| <= 1 "
                      "(docs/data.md): auto = the built-in task checked whole, a folder's slices "
                      "scaled to <= 1/sqrt(n), a service's by 1/sqrt(n); scale = the built-in "
                      "task's slices scaled too; promise = only each slice checked (unsafe "
                      "unless the holders keep the joint bound; warned at start)")
    reinvert_every: int = spec(0, min=0, doc="§7: recompute W_a^{-1} from W_a every k steps (0: off)")
    reinvert_iterations: int = spec(3, min=1, max=20, doc="Newton-Schulz steps per re-inversion")
    regularizer: float = spec(0.0, min=0.0, doc="§7: W_a starts at (1 + regularizer) I (0: off)")
    reciprocal_init: str = spec("linear", choices=("paper", "linear"),
                                doc="Newton start: linear = 24/17 - 8/17 d, minimax on [1, 2] "
                                    "(fewer rounds); paper = 3 e^(0.5 - d) + 0.003 (8 squarings)")
    trunc: str = spec("exact", choices=TRUNC_CHOICES,
                      doc="truncation after products: exact (cannot wrap; one round each with 2 "
                          "holders, Alg. 3 and a comparison with more), local (free, wraps with "
                          "probability |x|/2^64), paper (Alg. 3), pair (stochastic, fused), "
                          "auto (the engine's: local for 2, pair for more)")
    exploration: str = spec("secret", choices=("secret", "seeded"),
                            doc="secret: the dealer keys its exploration stream with os.urandom "
                                "(revealed after a batch run; a service's as hannun.reveal says); "
                                "seeded: keyed by the config seed (reproduction mode, not private)")
    reveal: str = spec("never", choices=("never", "stop", "every"),
                       doc="a service's secret exploration key (a batch run reveals its key at "
                           "its end whatever this says): never written out (serve-replay checks "
                           "the greedy decisions only, p' never learns which decisions "
                           "explored); stop: revealed at each stop, a fresh key drawn for what "
                           "follows; every: a fresh key every reveal_every decisions, each "
                           "revealed once its decisions are all decided (for audit or "
                           "evaluation: p' may then learn which past decisions explored). "
                           "Seeded exploration's key derives from the seed: not applied")
    reveal_every: int = spec(1000, min=BLOCK, max=10_000_000,
                             doc="with reveal = \"every\": the decisions each exploration key "
                                 f"covers (at least a block of the stream, {BLOCK}: each new key "
                                 "is a durable write at the dealer)")

    def validate(self, path: str) -> None:
        if self.dims < self.feature_holders:
            raise ConfigError(f"{path}.dims", f"{self.dims} features cannot be split over "
                              f"{self.feature_holders} feature holders (each needs at least one)")
        if self.data == "linear":
            linear_arm_dims(self.dims, self.arms, f"{path}.dims")
        if self.data == "mnist" and self.arms != 10:
            raise ConfigError(f"{path}.arms", f"the mnist task has 10 arms (digits), got {self.arms}")
        if self.trunc == "local" and self.feature_holders != 2:
            raise ConfigError(f"{path}.trunc", "'local' truncation is only correct for 2 "
                              f"feature holders, not {self.feature_holders}")
        if self.data in ("mnist", "kmeans"):
            if self.iterations > MNIST_TRAIN_SIZE:
                raise ConfigError(f"{path}.iterations", f"{self.iterations} exceeds the "
                                  f"{MNIST_TRAIN_SIZE} MNIST training images (one sweep)")
            require_mnist(f"{path}.data_dir", f"data = {self.data!r}", self.data_dir)
        worst = score_bound(self.iterations, self.regularizer)
        limit = compare.lex_limit(2 * self.precision_bits, self.arms)
        if 2 * worst >= limit:  # half the limit is margin for fixed-point drift
            fits = [L for L in range(8, self.precision_bits)
                    if 2 * worst < compare.lex_limit(2 * L, self.arms)]
            raise ConfigError(f"{path}.precision_bits", f"{self.precision_bits} bits: after "
                              f"{self.iterations} steps a score can reach {worst:.4g}, and the "
                              f"argmax orders scores (kept at 2L bits) only below {limit:.4g} "
                              f"with {self.arms} arms (half of it kept as margin for fixed-point "
                              "drift), so it could pick a wrong arm without an error; "
                              + (f"use precision_bits <= {fits[-1]}" if fits else "use fewer iterations"))

    @property
    def eta(self) -> float | None:
        """Theorem 1: eps-greedy is log(|A|/eps)-differentially private (None: eps = 0)."""
        return math.log(self.arms / self.epsilon) if self.epsilon > 0 else None


def score_bound(iterations: int, regularizer: float) -> float:
    """Largest |score| a run can produce: |b_a^T W_a^{-1} x| = |r^T X (lam I + X^T X)^{-1} x|
    <= sqrt(n_a)/(2 sqrt(lam)) for |r| <= 1, |x| <= 1 (lam = 1 + regularizer); an exploring
    step scores v < 1."""
    return max(math.sqrt(iterations) / (2 * math.sqrt(1 + regularizer)), 1.0)


def roles(s: HannunSection) -> list[tuple[str, int]]:
    return ([(FEATURE, i) for i in range(s.feature_holders)]
            + [(PULLER, 0), (REWARD, 0), (DEALER, 0), (ENV, 0)])


def holders(s: HannunSection) -> list[str]:
    """The computing parties: the feature holders."""
    return [f"{FEATURE}.{i}" for i in range(s.feature_holders)]


def peers(s: HannunSection, role: str, index: int) -> list[str]:
    """Feature holders talk to each other, p', p'' and the dealer; the environment only to
    p' (a_t in) and p'' (r_t out)."""
    fh = holders(s)
    if role == FEATURE:
        return [p for p in fh if p != f"{FEATURE}.{index}"] + [f"{PULLER}.0", f"{REWARD}.0",
                                                                 f"{DEALER}.0"]
    if role == ENV:
        return [f"{PULLER}.0", f"{REWARD}.0"]
    if role in (PULLER, REWARD):
        return fh + [f"{ENV}.0"]
    return fh


# ---------------------------------------------------------------- the dealer


def _dealer(ctx: PartyContext) -> dict:
    """Push [y_t], [y_t v_t] (2L fractional bits) and [gamma_t] to the feature holders in
    blocks (offline), then serve the engine's correlated randomness until they are done."""
    s: HannunSection = ctx.section
    start, st = ctx.resume() or (0, None)
    if st is not None:
        key = st["key"]
    else:
        key = exploration_key(ctx.config.seed) if s.exploration == "seeded" else os.urandom(32)
        # the key is the dealer's whole state: the engine's material is fresh per request
        ctx.checkpoint_finished({"key": key})
    push_exploration(ctx.chan, holders(s), key, s, start)
    material = serve(ctx.chan, holders(s), idle_s=max(60.0, ctx.config.run.deadline_s))
    # revealed once the run is over, in the dealer's own result, so the run can be replayed
    return {"material": material, "exploration_key": key.hex()}


# ---------------------------------------------------------------- feature holders' op chains


def _share_context(eng: Engine, s: HannunSection, mine: np.ndarray, me: int):
    """Steps 6-7: every feature holder shares its slice; concatenate into [x_t]."""
    return (yield from share_contexts(eng, holders(s), mine, me))


def _select(eng: Engine, s: HannunSection, b1: AShare, u: AShare, yv: AShare, gamma: AShare):
    """Steps 11-19: exact DP scores, argmax with the random tie-break, a_t to p'; [o_t] from
    p', [r_t] from p'' (once the environment has told it); returns [o_t], [r_t]."""
    yield from open_choice(eng, b1, u, yv, gamma, f"{PULLER}.0")       # 11-16: p' alone
    return (yield from gather([arith.input_value(eng, None, f"{PULLER}.0", 0),  # 17-18: [o_t]
                               arith.input_value(eng, None, f"{REWARD}.0", 0)]))  # 19: [r_t]


def _inverse_denominator(eng: Engine, s: HannunSection, u: AShare, x: AShare):
    """q_a = 1 / (1 + x^T W_a^{-1} x); the product is handed to the reciprocal untruncated."""
    xu = (yield from mul_truncated(eng, x, u, u.frac - eng.frac)).sum(axis=-1)  # x^T W_a^{-1} x
    start = "exp" if s.reciprocal_init == "paper" else "linear"         # den in [1, 2]: |x| = 1
    return (yield from functions.reciprocal(eng, xu + 1.0, s.newton_iterations, start))


def _nothing():
    """An op chain with no rounds."""
    return None
    yield  # pragma: no cover - makes this a generator


def _for_every_arm(share: AShare, arms: int) -> AShare:
    """The same shared row for each of the arms: (arms, 1, n)."""
    n = share.v.size
    return AShare(np.ascontiguousarray(np.broadcast_to(share.v.reshape(1, 1, n), (arms, 1, n))),
                  share.frac, share.lead)


def _step(eng: Engine, s: HannunSection, state: dict, x: AShare, explore, next_context):
    """One step t of Algorithm 1 on shares; returns [x_{t+1}] (None after the last step)."""
    A, D = s.arms, s.dims
    y, yv, gamma = explore
    u, b1 = yield from score_prefix(eng, state, x, y)                       # 10-11
    # eq. 1 without o_a: q_a u_a u_a^T (triangles, L bits), o_a multiplies it exactly below
    (o, r), smt, x_next, xx = yield from gather([
        _select(eng, s, b1, u, yv, gamma),
        symmetric.scaled_outer(eng, _inverse_denominator(eng, s, u, x), u), next_context,
        symmetric.outer_upper(eng, x) if "w" in state else _nothing()])
    m = smt.shape[-1]
    # o_a, r_t are integers: o_a times the term and o_a r_t x_t (one product of three factors:
    # one round, not two) are exact, with no truncation
    w_term, orx, oxx = yield from gather([
        arith.bilinear(eng, "matmul", o.reshape(A, 1, 1), smt.reshape(A, 1, m)),
        arith.outer3(eng, o, r, x),
        arith.bilinear(eng, "matmul", o.reshape(A, 1, 1), _for_every_arm(xx, A))
        if xx is not None else _nothing()])
    state["w_inv"] = state["w_inv"] - symmetric.mirror(w_term[:, 0, :], D)  # 21, by eq. 1
    state["b"] = state["b"] + orx.reshape(A, D)                              # 22
    if xx is not None:
        state["w"] = state["w"] + symmetric.mirror(oxx[:, 0, :], D)          # 21 itself
    return x_next


def _reinvert(eng: Engine, s: HannunSection, state: dict):
    """§7: refresh W_a^{-1} from W_a by Newton-Schulz, X <- X (2I - W X), started from the
    running estimate (quadratic convergence; two products per step)."""
    two_i = np.repeat(2.0 * np.eye(s.dims)[None], s.arms, axis=0)
    x_inv = state["w_inv"]
    for _ in range(s.reinvert_iterations):
        wx = yield from arith.bilinear(eng, "matmul", state["w"], x_inv)
        x_inv = yield from arith.bilinear(eng, "matmul", x_inv, (-wx) + two_i)
    state["w_inv"] = x_inv


def _save_state(state: dict, x: AShare | None, explore: ExplorationShares) -> dict:
    """A feature holder's checkpoint: its shares of W^{-1}, b (W) and x_{t+1}, and its place
    in the exploration stream."""
    shares = {k: v.to_state() for k, v in (state | {"x": x}).items() if v is not None}
    return {"shares": shares, "explore": explore.state()}


def _feature_holder(ctx: PartyContext) -> dict:
    s: HannunSection = ctx.section
    eng = Engine(ctx.chan, holders(s), dealer=f"{DEALER}.0", frac_bits=s.precision_bits,
                 trunc=s.trunc)
    own = ctx.source()                                                      # 5: my features
    A, D = s.arms, s.dims
    start, saved = ctx.resume() or (0, None)

    def run(gen):
        return eng.run(Op(ONLINE, gen))

    t0 = time.perf_counter()
    before = ctx.chan.stats.op(ONLINE).to_dict()
    if saved is None:
        eye = np.repeat(np.eye(D)[None], A, axis=0)
        # 1-3: W_a = I (W_a^{-1} = I), b_a = 0: public constants need no sharing round
        state = {"w_inv": eng.public(eye / (1.0 + s.regularizer)), "b": eng.zeros((A, D))}
        if s.reinvert_every:
            state["w"] = eng.public(eye * (1.0 + s.regularizer))
        x = run(_share_context(eng, s, own.features(0), ctx.index))
    else:
        state = {k: AShare.from_state(v, eng.lead) for k, v in saved["shares"].items()}
        x = state.pop("x", None)
    explore = ExplorationShares(ctx.chan, f"{DEALER}.0", s, eng.lead,
                                saved["explore"] if saved else None)
    for t in range(start, s.iterations):                                     # 4
        nxt = (_share_context(eng, s, own.features(t + 1), ctx.index) if t + 1 < s.iterations
               else _nothing())
        x = run(_step(eng, s, state, x, explore.next(t), nxt))
        if s.reinvert_every and (t + 1) % s.reinvert_every == 0:
            run(_reinvert(eng, s, state))
        ctx.checkpoint(t + 1, lambda: _save_state(state, x, explore))
        ctx.progress(t + 1, s.iterations)
    wall = time.perf_counter() - t0
    after = ctx.chan.stats.op(ONLINE).to_dict()
    eng.close()
    return {"online": {k: after[k] - before[k] for k in after}, "online_wall_s": wall,
            "steps": s.iterations - start}


# ---------------------------------------------------------------- p', the environment, p''


def _arm_puller(ctx: PartyContext) -> dict:
    """Step 16: learn a_t from the one-hot opened to p' alone and pull it in the environment;
    17-18: share o_t."""
    s: HannunSection = ctx.section
    eng = Engine(ctx.chan, holders(s), dealer=None)
    start, saved = ctx.resume() or (0, {"arms": []})
    arms = list(saved["arms"])
    for t in range(start, s.iterations):
        opened = np.rint(eng.run(Op(ONLINE, arith.open_to(eng, None, ctx.name))))
        hot = np.flatnonzero(opened == 1)
        if len(hot) != 1 or np.count_nonzero(opened) != 1:
            raise ProtocolError(holders(s)[0], f"{ONLINE} step {t}",
                                f"opened selection is not one-hot: {opened.tolist()}")
        arms.append(int(hot[0]))
        ctx.chan.send(PULL, f"{ENV}.0", arms[-1])   # first: p''s reward is the longer way round
        eng.run(Op(ONLINE, arith.input_value(eng, np.eye(s.arms)[hot[0]], ctx.name, 0)))
        ctx.checkpoint(t + 1, lambda: {"arms": arms})
        ctx.progress(t + 1, s.iterations)
    return {"arms": arms}


def _environment(ctx: PartyContext) -> dict:
    """The world: the arm p' pulls at step t earns its reward, delivered to p'' alone."""
    s: HannunSection = ctx.section
    world = ctx.source()
    puller = f"{PULLER}.0"
    start, saved = ctx.resume() or (0, {"delivered": [], "regret": []})
    delivered, regret = list(saved["delivered"]), list(saved["regret"])
    for t in range(start, s.iterations):
        arm = expect_index(ctx.chan.recv(PULL, puller), s.arms, puller, f"{PULL}#{t}")
        reward, loss = world.feedback(t, arm)
        delivered.append(reward)
        regret.append(loss)
        ctx.chan.send(DELIVER, f"{REWARD}.0", reward)
        ctx.checkpoint(t + 1, lambda: {"delivered": delivered, "regret": regret})
        ctx.progress(t + 1, s.iterations)
    return {"delivered": delivered, "regret": regret}


def _reward_holder(ctx: PartyContext) -> dict:
    """Step 19: receive r_t from the environment and share it with the feature holders."""
    s: HannunSection = ctx.section
    eng = Engine(ctx.chan, holders(s), dealer=None)
    env = f"{ENV}.0"
    start, _ = ctx.resume() or (0, None)
    for t in range(start, s.iterations):
        r = expect_real(ctx.chan.recv(DELIVER, env), env, f"{DELIVER}#{t}")
        if r not in (0.0, 1.0):  # shared as an integer; score_bound needs |r| <= 1
            raise ProtocolError(env, f"{DELIVER}#{t}", f"reward {r!r}: Hannun's rewards are 0 or 1")
        eng.run(Op(ONLINE, arith.input_value(eng, np.array([r]), ctx.name, 0)))
        ctx.checkpoint(t + 1, {})   # p'' keeps nothing
        ctx.progress(t + 1, s.iterations)
    return {}


def sources(cfg: Config, role: str, index: int, folder):
    """What each role reads (mpcbandit/data/hannun_data.py): a holder its features, the
    environment its rewards; the others nothing."""
    name = f"{role}.{index}"
    if role == FEATURE:
        return hannun_data.features(cfg, index, folder, name)
    return hannun_data.feedback(cfg, folder, name) if role == ENV else no_data(folder, name)


def run_role(ctx: PartyContext) -> dict:
    return {FEATURE: _feature_holder, PULLER: _arm_puller, REWARD: _reward_holder,
            DEALER: _dealer, ENV: _environment}[ctx.role](ctx)


def summarize(cfg: Config, results: list[dict]) -> dict:
    s: HannunSection = cfg.section
    puller = next(r for r in results if r["role"] == PULLER)
    arms = np.asarray(puller["output"]["arms"], dtype=np.int64)
    world = next(r for r in results if r["role"] == ENV)["output"]
    out = outcome_of(s, arms, world["delivered"], world["regret"])
    fh = [r for r in results if r["role"] == FEATURE]
    steps = fh[0]["output"]["steps"]  # fewer than T when this run resumed
    name = lambda r: f"{r['role']}.{r['index']}"  # noqa: E731
    online = [r["output"]["online"] for r in fh]
    out.update({
        "seconds_per_step": max(r["output"]["online_wall_s"] for r in fh) / steps,
        "critical_rounds_per_step": max(o["rounds"] for o in online) / steps,
        "bytes_per_step_by_party": {name(r): (r["bytes_sent"] + r["bytes_received"]) / steps
                                    for r in results},
        "online_bytes_per_step_feature_holder":
            max(o["bytes_sent"] + o["bytes_received"] for o in online) / steps,
        "online_bytes_sent_per_step_feature_holder": max(o["bytes_sent"] for o in online) / steps,
    })
    dealer = next(r for r in results if r["role"] == DEALER)
    key = bytes.fromhex(dealer["output"]["exploration_key"])
    out["exploration"] = s.exploration
    out["exploration_key"] = key.hex()  # revealed: `run --plaintext --replay` reads it here
    if read_folders(results):  # the data stayed with its parties: `--plaintext --data` replays
        return out | {"agreement_with_replay": None, "replay_cumulative_reward": None}
    ref = replay(cfg, key)
    out["agreement_with_replay"] = float(np.mean(np.asarray(ref["series"]["arms"]) == arms))
    out["replay_cumulative_reward"] = ref["cumulative_reward"]
    return out


def sends_ahead(s: HannunSection) -> int:
    """The dealer pushes the whole exploration stream ([y], [y v], [gamma]: 1 + 2A words a
    step) without waiting (p', the environment and p'' each wait for the step before); engine
    ops open at most every arm's D x D matrix twice."""
    T, A, D = s.iterations, s.arms, s.dims
    streams = 8 * T * (1 + 2 * A) + (T // BLOCK + 1) * MESSAGE_OVERHEAD + 2 * MESSAGE_OVERHEAD
    return streams + engine_ahead_bytes(2 * A * (D * D + D))


PROTOCOL = Protocol(name="hannun", paper='Hannun et al. 2019, privacy-preserving contextual bandits (MPC)',
                    section=HannunSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, replay=replay_run, summarize=summarize, peers=peers,
                    prepare=lambda cfg, role: role in (FEATURE, ENV) and hannun_data.preload_task(cfg),
                    sources=sources, split=lambda cfg, out, suffix: hannun_data.split(
                        cfg, out, suffix, holders(cfg.section), f"{ENV}.0",
                        [f"{r}.0" for r in (PULLER, REWARD, DEALER)]),
                    privacy_warnings=lambda s: [] if s.exploration == "secret" else [
                        "hannun.exploration = 'seeded': the exploration steps and tie-break "
                        "permutations derive from the public config seed, so p' knows which "
                        "steps are greedy (reproduction mode; 'secret' for deployment)"],
                    sends_ahead=sends_ahead, checkpoints=True,
                    serve="mpcbandit.protocols.hannun.serve",
                    steps=lambda s: ("iterations", 1), headline=headline)
