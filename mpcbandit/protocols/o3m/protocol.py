"""O3M: vertical federated LinUCB / LinTS with an orthogonal mask (Cao et al. 2023).

Parties (one process each):
- pmg.0  privacy mask generator: draws a Haar-random orthogonal Q in R^{d x d}, splits it by
         columns Q = [Q^1 ... Q^M] and sends Q^j to participant j alone; then it is done.
- ap.0   active participant (the paper's participant 1): owns feature block 1 and the user
         feedback; sums the masked contexts, runs LinUCB (Alg. 1) or LinTS (Alg. 2) on them.
- pp.j   passive participant j = 1..M-1 (the paper's participant j+1): each round sends
         Q^{j+1} x^{j+1}_{t,a} for every arm to the AP, as one K x d array.
- env.0  the simulated user stream: holds the full contexts and theta*, answers the AP's
         recommendation with the reward and keeps the regret. It talks to the AP only.
Participant p in 0..M-1 owns columns block p of the context: p = 0 is ap.0, p >= 1 is pp.p.

Where the features come from: each participant asks its source (ctx.source(),
mpcbandit/data/o3m_data.py) for its own block: its own folder's table, or a deterministic
per-participant stream derived from the config seed (`participant_stream`); env.0's source
gives the users' feedback (its folder's table, or the regenerated full contexts).

Per round the AP does two rounds of messages: receive the PPs' masked contexts (which the PPs
stream ahead of the AP, the channel buffers them) and one request/answer with env. Every
WINDOW_ROUNDS rounds the AP also tells the PPs to go on (tag ``window``, not in the paper): a
PP never runs more than 2 x WINDOW_ROUNDS rounds ahead, so the AP's memory does not grow with T.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mpcbandit.bandits.linear import LinearBandit
from mpcbandit.bodies import expect_array, expect_index, expect_real
from mpcbandit.config import Config, spec
from mpcbandit.crypto.orthogonal_mask import column_blocks, haar_orthogonal
from mpcbandit.data import criteo, o3m_data
from mpcbandit.data.common_task import COMMON, TaskRewards, prepare_task
from mpcbandit.data.folder import no_data
from mpcbandit.data.o3m_data import environment, participant_stream  # noqa: F401 (used by experiments)
from mpcbandit.data.vertical_synthetic import NOISE_READINGS
from mpcbandit.errors import ConfigError
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols import MESSAGE_OVERHEAD, PartyContext, Protocol, seeded_rng

PMG, AP, PP, ENV = "pmg", "ap", "pp", "env"
MASK, CONTEXTS, FEEDBACK, DONE, WINDOW = "mask", "contexts", "feedback", "done", "window"
#: rounds a passive participant may run ahead of the AP: every WINDOW rounds the AP tells it
#: to go on, so the AP holds at most 2 x WINDOW rounds of its contexts (not the whole run)
WINDOW_ROUNDS = 64
TS_PURPOSE = "o3m/lints-sampling"  # public sampling seed: same draws in secure and plaintext runs
# Scores equal only up to rounding in masked coordinates; closer than this counts as a tie
# (lowest arm wins), e.g. the first round, when every unit-norm arm has UCB exactly beta.
TIE_TOL = 1e-9


@dataclass(frozen=True)
class O3mSection(TaskRewards):
    """[o3m]: participants and their feature split, the bandit and its data."""

    participants: int = spec(5, min=2, max=100_000, doc="M: the AP plus M-1 passive participants")
    partition: list[int] = spec([20] * 5, doc="d_j of each participant (M entries, sum = d)")
    arms: int = spec(10, min=2, max=1_000_000, doc="K arms per round")
    iterations: int = spec(1000, min=1, max=100_000_000, doc="T rounds")
    algorithm: str = spec("linucb", choices=("linucb", "lints"), doc="LinUCB or LinTS scores")
    beta: float = spec(0.5, min=0.0, doc="LinUCB exploration beta_t (constant)")
    v: float = spec(0.01, min=0.0, doc="LinTS posterior scale v")
    lam: float = spec(1.0, key="lambda", doc="ridge regulariser lambda > 0")
    noise: str = spec("std", choices=NOISE_READINGS,
                      doc="synthetic rewards' N(0, 0.05) read as a std (reproduces the paper's "
                          "partial/central ratio > 10) or as a variance")
    data: str = spec("synthetic", choices=("synthetic", "criteo", *COMMON),
                     doc="synthetic contexts, the Criteo sample (o3m.data_path), or a common "
                         "task of the frontier: linear | mnist (partition over z's components "
                         "x 10)")
    data_path: str = spec("", local=True, doc="criteo log (CSV or TSV); '' = the shared 1,999-row sample")
    baseline: str = spec("central", choices=("central", "partial"),
                         doc="--plaintext: LinUCB/LinTS on all d features, or the first few only")
    partial_features: int = spec(0, min=0, doc="partial baseline width; 0 = the AP's own block")
    max_value: float = spec(1e6, min=1e-6, max=1e100,
                            doc="`serve`: the largest magnitude of a context value or a reward "
                                "its APIs take (400 beyond it): the AP's sums of outer products "
                                "stay finite, and its logs valid JSON, for any service's life")

    @property
    def dims(self) -> int:
        return sum(self.partition)

    def validate(self, path: str) -> None:
        if len(self.partition) != self.participants:
            raise ConfigError(f"{path}.partition", f"has {len(self.partition)} entries but "
                              f"{path}.participants = {self.participants}: one d_j per participant")
        for i, dj in enumerate(self.partition):
            if dj < 1:
                raise ConfigError(f"{path}.partition[{i}]", f"{dj} features: every participant needs >= 1")
        if self.dims < 2:
            raise ConfigError(f"{path}.partition", "d = sum of the partition must be >= 2")
        if self.data == "criteo" and self.dims != criteo.DIMS:
            raise ConfigError(f"{path}.partition", f"sums to {self.dims}, the Criteo contexts have "
                              f"d = {criteo.USER_DIMS} x {criteo.ITEM_DIMS} = {criteo.DIMS} features")
        if not self.lam > 0:
            raise ConfigError(f"{path}.lambda", f"{self.lam!r} must be > 0")
        self.check_task(path, ("partition", self.dims), ("arms", self.arms))
        if self.partial_features > self.dims:
            raise ConfigError(f"{path}.partial_features", f"{self.partial_features} > d = {self.dims}")


# ---------------------------------------------------------------- party table


def participant_name(p: int) -> str:
    """Party name of participant p (0 = the AP)."""
    return f"{AP}.0" if p == 0 else f"{PP}.{p}"


def roles(s: O3mSection) -> list[tuple[str, int]]:
    return [(PMG, 0), (AP, 0)] + [(PP, j) for j in range(1, s.participants)] + [(ENV, 0)]


def peers(s: O3mSection, role: str, index: int) -> list[str]:
    passive = [participant_name(p) for p in range(1, s.participants)]
    if role == PMG:
        return [participant_name(p) for p in range(s.participants)]
    if role == AP:
        return [f"{PMG}.0", *passive, f"{ENV}.0"]
    if role == PP:
        return [f"{PMG}.0", f"{AP}.0"]
    return [f"{AP}.0"]


# ---------------------------------------------------------------- roles


def choose_arm(bandit: LinearBandit, contexts: np.ndarray, s: O3mSection,
               sampler: np.random.Generator) -> int:
    """Alg. 1 step 6 (UCB) or Alg. 2 step 7 (Thompson, sampled in score space)."""
    if s.algorithm == "linucb":
        return bandit.choose_ucb(contexts, s.beta, TIE_TOL)
    return bandit.choose_ts_scores(contexts, s.v, sampler, TIE_TOL)


def _mask_generator(ctx: PartyContext) -> dict:
    s: O3mSection = ctx.section
    if ctx.resume() is not None:  # the participants kept their blocks in their checkpoints
        return {"dims": s.dims}
    q = haar_orthogonal(s.dims, Prg())                      # Alg. 1 step 2: secret, from AES-CTR
    blocks = column_blocks(q, s.partition)
    ctx.chan.exchange(MASK, send={participant_name(p): blocks[p] for p in range(s.participants)})
    ctx.checkpoint_finished()
    ctx.progress(1, 1)
    return {"dims": s.dims}


def _receive_mask(ctx: PartyContext, p: int) -> np.ndarray:
    s: O3mSection = ctx.section
    return expect_array(ctx.chan.recv(MASK, f"{PMG}.0"), (s.dims, s.partition[p]), f"{PMG}.0",
                         f"{MASK}#0")


def _passive_participant(ctx: PartyContext) -> dict:
    s: O3mSection = ctx.section
    start, st = ctx.resume() or (0, None)
    q_j = st["q"] if st else _receive_mask(ctx, ctx.index)
    own = ctx.source()
    for t in range(start, s.iterations):
        if t % WINDOW_ROUNDS == 0 and t - WINDOW_ROUNDS - 1 >= start:
            ctx.chan.recv(WINDOW, f"{AP}.0")  # the AP has read every round before t - WINDOW
        ctx.chan.send(CONTEXTS, f"{AP}.0", own.features(t) @ q_j.T)   # step 5: Q^j x^j_{t,a}
        ctx.checkpoint(t + 1, {"q": q_j})
        ctx.progress(t + 1, s.iterations)
    ctx.chan.recv(DONE, f"{AP}.0")  # keep the link open until the AP has everything
    return {}


def _active_participant(ctx: PartyContext) -> dict:
    s: O3mSection = ctx.section
    passive = [participant_name(p) for p in range(1, s.participants)]
    env = f"{ENV}.0"
    start, st = ctx.resume() or (0, None)
    q_1 = st["q"] if st else _receive_mask(ctx, 0)
    own = ctx.source()
    bandit = LinearBandit(s.dims, s.lam)                          # step 1: Lambda = lambda I, u = 0
    sampler = ctx.rng(TS_PURPOSE)
    arms, theta_norms = [], []
    if st:
        bandit.v_inv, bandit.b = st["v_inv"], st["b"]
        sampler.bit_generator.state = st["sampler"]
        arms, theta_norms = list(st["arms"]), list(st["theta_norms"])
    for t in range(start, s.iterations):
        got = ctx.chan.exchange(CONTEXTS, recv=passive)          # step 5
        masked = own.features(t) @ q_1.T
        for p in passive:
            masked += expect_array(got[p], (s.arms, s.dims), p, f"{CONTEXTS}#{t}")
        arm = choose_arm(bandit, masked, s, sampler)             # step 6
        reward = ctx.chan.exchange(FEEDBACK, send={env: arm}, recv=[env])[env]   # step 7
        if reward is not None:  # None: an unmatched Criteo replay round
            bandit.update(masked[arm], expect_real(reward, env, f"{FEEDBACK}#{t}"))  # steps 8-10
        arms.append(arm)
        theta_norms.append(float(np.linalg.norm(bandit.theta)))
        if (t + 1) % WINDOW_ROUNDS == 0 and t + 1 + WINDOW_ROUNDS < s.iterations:
            ctx.chan.exchange(WINDOW, send={p: None for p in passive})
        ctx.checkpoint(t + 1, lambda: {"q": q_1, "v_inv": bandit.v_inv, "b": bandit.b,
                                       "sampler": sampler.bit_generator.state, "arms": arms,
                                       "theta_norms": theta_norms})
        ctx.progress(t + 1, s.iterations)
    ctx.chan.exchange(DONE, send={p: None for p in passive})
    return {"arms": arms, "theta_norms": theta_norms}


def _environment(ctx: PartyContext) -> dict:
    s: O3mSection = ctx.section
    ap = f"{AP}.0"
    env = ctx.source()
    start, st = ctx.resume() or (0, {"rewards": [], "regret": []})
    rewards, regret = list(st["rewards"]), list(st["regret"])  # the stream is a function of t
    for t in range(start, s.iterations):
        arm = expect_index(ctx.chan.recv(FEEDBACK, ap), s.arms, ap, f"{FEEDBACK}#{t}")
        reward, loss = env.feedback(t, arm)
        ctx.chan.send(FEEDBACK, ap, reward)
        rewards.append(reward)
        regret.append(loss)
        ctx.checkpoint(t + 1, lambda: {"rewards": rewards, "regret": regret})
        ctx.progress(t + 1, s.iterations)
    return {"rewards": rewards, "regret": regret}


def sources(cfg: Config, role: str, index: int, folder):
    """What each role reads (mpcbandit/data/o3m_data.py): a participant its columns, env.0 the
    users' feedback; the mask generator nothing."""
    name = f"{role}.{index}"
    if role in (AP, PP):
        return o3m_data.features(cfg, index if role == PP else 0, folder, name)
    return o3m_data.feedback(cfg, folder, name) if role == ENV else no_data(folder, name)


def run_role(ctx: PartyContext) -> dict:
    return {PMG: _mask_generator, AP: _active_participant, PP: _passive_participant,
            ENV: _environment}[ctx.role](ctx)


# ---------------------------------------------------------------- reference and summary


def plaintext_run(cfg: Config, features: int | Sequence[int] | None = None,
                  data_dir=None) -> dict:
    """Centralised LinUCB/LinTS on unmasked columns: the first `features` of them if an int,
    those listed if a sequence (a random partition), all d if None; on every party's folder
    of data_dir if given (one process reads all the data: the non-private reference)."""
    s: O3mSection = cfg.section
    if features is None or isinstance(features, int):
        cols = np.arange(s.dims if features is None else features)
    else:
        cols = np.asarray(features, dtype=np.int64)
    env = environment(cfg) if data_dir is None else o3m_data.folder_environment(
        cfg, data_dir, [participant_name(p) for p in range(s.participants)], f"{ENV}.0")
    bandit = LinearBandit(len(cols), s.lam)
    sampler = seeded_rng(cfg.seed, TS_PURPOSE)
    arms, theta_norms, rewards, regret = [], [], [], []
    for t in range(s.iterations):
        contexts = env.contexts(t)[:, cols]
        arm = choose_arm(bandit, contexts, s, sampler)
        reward, loss = env.feedback(t, arm)
        if reward is not None:
            bandit.update(contexts[arm], reward)
        arms.append(arm)
        theta_norms.append(float(np.linalg.norm(bandit.theta)))
        rewards.append(reward)
        regret.append(loss)
    return _fields(s, arms, theta_norms, rewards, regret)


def plaintext(cfg: Config, data_dir=None) -> dict:
    s: O3mSection = cfg.section
    if s.baseline == "partial":
        return (plaintext_run(cfg, s.partial_features or s.partition[0], data_dir)
                | {"baseline": "partial"})
    return plaintext_run(cfg, None, data_dir) | {"baseline": "central"}


def _fields(s: O3mSection, arms, theta_norms, rewards, regret) -> dict:
    got = [r for r in rewards if r is not None]
    series = {"arms": arms, "rewards": rewards, "theta_norm": theta_norms}
    out = {"steps": s.iterations, "series": series, "cumulative_reward": float(sum(got)),
           "algorithm": s.algorithm, "data": s.data}
    if s.data == "criteo" or None in regret:  # a replayed log (built in, or env.0's log.*)
        out |= {"matched": len(got), "ctr": float(np.mean(got)) if got else None}
    else:
        series["regret"] = regret
        out["cumulative_regret"] = float(sum(regret))
    return out


def summarize(cfg: Config, results: list[dict]) -> dict:
    s: O3mSection = cfg.section
    ap = next(r for r in results if r["role"] == AP)
    env = next(r for r in results if r["role"] == ENV)
    out = _fields(s, ap["output"]["arms"], ap["output"]["theta_norms"], env["output"]["rewards"],
                  env["output"]["regret"])
    steps = s.iterations - (ap.get("resumed_from") or 0)  # the steps its time covers
    return out | {"seconds_per_step": ap["protocol_wall_s"] / steps}


def sends_ahead(s: O3mSection) -> int:
    """A passive participant runs up to 2 x WINDOW_ROUNDS rounds ahead, K x d words a round;
    the mask generator sends a d x d_j block."""
    per_round = 8 * s.arms * s.dims + MESSAGE_OVERHEAD
    return 2 * WINDOW_ROUNDS * per_round + 8 * s.dims * s.dims + MESSAGE_OVERHEAD


def headline(s: dict) -> list[str]:
    """Regret on synthetic data, CTR on a real log."""
    what = f"{s['algorithm']}" + (f", {s['baseline']} features" if "baseline" in s else "")
    if "ctr" in s:
        ctr = "no matched step" if s["ctr"] is None else f"CTR {s['ctr']:.4f}"
        return [f"{ctr} over {s['matched']} steps the log has a reward for ({what})"]
    return [f"cumulative regret {s['cumulative_regret']:.3f} ({what})"]


PROTOCOL = Protocol(name="o3m", paper='Cao et al. 2023, O3M: orthogonal-mask vertical federated LinUCB/LinTS',
                    section=O3mSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, peers=peers,
                    sends_ahead=sends_ahead, checkpoints=True,
                    steps=lambda s: ("iterations", 1),
                    headline=headline,
                    prepare=lambda cfg, role: role != PMG and prepare_task(cfg),
                    sources=sources, serve="mpcbandit.protocols.o3m.serve",
                    split=lambda cfg, out, suffix: o3m_data.split(
                        cfg, out, suffix, [participant_name(p) for p in range(
                            cfg.section.participants)], f"{ENV}.0", [f"{PMG}.0"]))
