"""SAMBA: secure federated multi-armed bandits (Ciucanu, Lafourcade, Marcadet, Soare, JAIR 2022).

K + 3 parties (Fig. 5/6): the data client DC, the Controller, Comp and data owners DO_1..DO_K,
each owning one Bernoulli arm. Step numbers in comments are the paper's:

  (0)   DC -> Controller: N, algorithm A and its parameters, Paillier public key
  (1)   Controller -> Comp: N, A;  Controller -> DO_i: N, A, seed_alpha, seed_epsilon, pk;
        then Comp's AES key reaches every DO_i over X25519, relayed by the Controller
  (2)   DO_i -> Controller: Enc(alpha_t * v_i)           (skipped on exploration steps, §5.4)
  (3)   Controller -> Comp: sigma_t([Enc(alpha_t v_i)])  (one batched message)
  (4)   Comp -> Controller: sigma_t([Enc(b_i)])          (one batched message)
  (5)   Controller -> DO_i: Enc(b_i); DO_i pulls its arm if b_i = 1
  (6)   DO_i -> Controller: E(s_i)                       (Paillier)
  (7)   Controller -> DC: prod E(s_i) = E(sum s_i)

Steps 2-5 run nb_A times per step t in [K+1, N] (Pursuit: twice, §4.2). The Controller never
holds the AES key; Comp sees only masked scores in a fresh random order; DC sees only the sum.
"""

from __future__ import annotations

import math
import os
import struct
import time
from dataclasses import dataclass

from mpcbandit.bandits.mab import (ALGORITHMS, Algorithm, ArmState, make_algorithm, play_standard,
                                   uniform_position)
from mpcbandit.bodies import expect_bytes, expect_finite
from mpcbandit.config import Config, spec
from mpcbandit.crypto import paillier
from mpcbandit.crypto.aead import Aead, AuthenticationError, sealed_size
from mpcbandit.crypto.keyexchange import KeyPair, unwrap_key, wrap_key
from mpcbandit.crypto.streams import KeyedStream
from mpcbandit.data import samba_data
from mpcbandit.data.folder import no_data
from mpcbandit.data.samba_data import arm_means
from mpcbandit.errors import ConfigError, ProtocolError
from mpcbandit.protocols import MESSAGE_OVERHEAD, PartyContext, Protocol
from mpcbandit.protocols.samba import streams

DC, CONTROLLER, COMP, DO = "dc", "controller", "comp", "do"
DC0, CONTROLLER0, COMP0 = f"{DC}.0", f"{CONTROLLER}.0", f"{COMP}.0"

SCORE_BYTES = 8                       # float64
SCORE_CT = sealed_size(SCORE_BYTES)   # 36 bytes on the wire per score
BIT_CT = sealed_size(1)               # 29 bytes per pulling bit
KEY_CONTEXT = b"samba/aes-key"
MIN_PAILLIER_BITS = 2048              # NIST SP 800-57: ~112-bit security
_PROGRESS_EVERY = 256


@dataclass(frozen=True)
class SambaSection:
    """[samba]: budget, arms, algorithm and its parameters, data and key sizes."""

    budget: int = spec(1000, min=2, max=10**9, doc="N: total number of pulls")
    arms: int = spec(10, min=2, max=10_000, doc="K: arms, one data owner each")
    algorithm: str = spec("epsilon-greedy", doc="epsilon-greedy | epsilon-decreasing | ucb | "
                          "thompson | softmax | pursuit (or any registered plug-in)")
    epsilon: float = spec(0.1, min=0.0, max=1.0, doc="exploration probability (epsilon-greedy)")
    tau: float = spec(0.1, min=1e-12, doc="Softmax temperature (> 0)")
    beta: float = spec(0.1, min=0.0, max=1.0, doc="Pursuit learning rate")
    data: str = spec("synthetic", local=True, doc="'synthetic', or an arm file (K, then one mean per line), "
                     "absolute or relative to the data directory ($MPCBANDIT_DATA or ../shared/data)")
    paillier_bits: int = spec(2048, min=128, max=8192, doc="Paillier modulus length (>= 2048 "
                              "unless insecure_small_keys)")
    insecure_small_keys: bool = spec(False, doc="allow Paillier keys below 2048 bits: fast tests "
                                     "only, such keys can be factored")
    fresh_seeds: bool = spec(True, doc="protocol seeds from os.urandom (private); false: from the "
                             "config seed, so --plaintext matches (reproduction, not private)")

    def validate(self, path: str) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ConfigError(f"{path}.algorithm", f"{self.algorithm!r} is not one of "
                              f"{', '.join(sorted(ALGORITHMS))}")
        if self.budget < self.arms:
            raise ConfigError(f"{path}.budget", f"budget {self.budget} is below the number of arms "
                              f"{self.arms} (every arm is pulled once first)")
        if self.paillier_bits < MIN_PAILLIER_BITS and not self.insecure_small_keys:
            raise ConfigError(f"{path}.paillier_bits", f"{self.paillier_bits}-bit Paillier keys can "
                              f"be factored; use >= {MIN_PAILLIER_BITS}, or set {path}."
                              "insecure_small_keys = true for a test")
        if self.data != "synthetic":
            arm_means(self, 0, key=f"{path}.data")

    @property
    def params(self) -> dict:
        return {"epsilon": self.epsilon, "tau": self.tau, "beta": self.beta}


def roles(s: SambaSection) -> list[tuple[str, int]]:
    return [(DC, 0), (CONTROLLER, 0), (COMP, 0)] + [(DO, i) for i in range(s.arms)]


def peers(s: SambaSection, role: str, index: int) -> list[str]:
    """The Controller talks to everyone; every other party only to the Controller (Fig. 5)."""
    if role == CONTROLLER:
        return [DC0, COMP0] + owners(s.arms)
    return [CONTROLLER0]


def owners(k: int) -> list[str]:
    return [f"{DO}.{i}" for i in range(k)]


def _aad(kind: str, t: int, l: int) -> bytes:
    return f"samba/{kind}/{t}/{l}".encode()


def _recv_setup(ctx: PartyContext, label: str, peer: str):
    """A set-up receive: it waits for DC's Paillier key generation and every party's start, so
    it may take up to run.startup_s (not just run.deadline_s) on a loaded machine."""
    chan = ctx.chan
    return chan.recv(label, peer, deadline_s=max(chan.deadline_s, ctx.config.run.startup_s))


def _algorithm_from(setup, peer: str) -> tuple[int, Algorithm]:
    """Budget and algorithm of a set-up message, or a ProtocolError naming its sender."""
    try:
        budget = setup["budget"]
        alg = make_algorithm(setup["algorithm"], **setup["params"])
    except (KeyError, TypeError) as e:
        raise ProtocolError(peer, "setup#0", f"bad set-up message: {e}") from None
    if not isinstance(budget, int) or isinstance(budget, bool) or budget < 1:
        raise ProtocolError(peer, "setup#0", f"budget {budget!r} is not a positive int")
    for key, value in setup["params"].items():  # a NaN epsilon never explores: parties diverge
        if type(value) not in (int, float) or not math.isfinite(value):
            raise ProtocolError(peer, "setup#0", f"parameter {key!r:.40} is {value!r:.40}, "
                                                 f"not a finite number")
    return budget, alg


# ---------------------------------------------------------------- roles


def run_role(ctx: PartyContext, comp_view: list | None = None) -> dict:
    """One party's part; comp_view (tests only) collects what Comp sees in clear.

    Each role reports ``cpu_s``: its process CPU time (all threads, zmq's included) during
    the protocol, for the time shares of Fig. 8(d).
    """
    cpu0 = time.process_time()
    if ctx.role == DC:
        out = _data_client(ctx)
    elif ctx.role == CONTROLLER:
        out = _controller(ctx)
    elif ctx.role == COMP:
        out = _comp(ctx, comp_view)
    else:
        out = _data_owner(ctx)
    return {**out, "cpu_s": time.process_time() - cpu0}


def _data_client(ctx: PartyContext) -> dict:
    s: SambaSection = ctx.section
    chan = ctx.chan
    # a resumed run sets up afresh (new Paillier and AES keys): nothing is encrypted under
    # the old ones once the data owners have checkpointed, so DC keeps nothing
    ctx.checkpoint_finished()
    pk, sk = paillier.keygen(s.paillier_bits)
    chan.send("setup", CONTROLLER0, {"budget": s.budget, "algorithm": s.algorithm,  # (0)
                                     "params": s.params, "paillier_n": pk.n})
    # DC is idle for the whole run: its one wait may last deadline_s per core iteration
    whole_run = chan.deadline_s * (1 + s.budget * ALGORITHMS[s.algorithm].iterations)
    total = chan.recv("sum", CONTROLLER0, deadline_s=whole_run)                     # (7)
    try:
        cumulative = paillier.decrypt(sk, total)
    except ValueError as e:
        raise ProtocolError(CONTROLLER0, "sum#0", str(e)) from None
    ctx.progress(s.budget, s.budget)
    return {"cumulative_reward": int(cumulative)}


def _controller(ctx: PartyContext) -> dict:
    chan = ctx.chan
    dos = owners(ctx.section.arms)
    k = len(dos)
    setup = _recv_setup(ctx, "setup", DC0)                                          # (0)
    budget, alg = _algorithm_from(setup, DC0)
    name, params = setup["algorithm"], setup["params"]
    start, seeds = ctx.resume() or (k, {p: streams.protocol_seed(ctx.config, p)
                                        for p in ("alpha", "epsilon", "sigma")})
    ctx.checkpoint_finished(seeds)  # per step the Controller keeps nothing but its seeds
    seed_alpha, seed_eps = seeds["alpha"], seeds["epsilon"]
    chan.exchange("setup", send={COMP0: {"budget": budget, "algorithm": name,       # (1)
                                         "params": params, "arms": k},
                                 **{d: {"budget": budget, "algorithm": name, "params": params,
                                        "seed_alpha": seed_alpha, "seed_epsilon": seed_eps,
                                        "paillier_n": setup["paillier_n"]} for d in dos}})
    pubs = chan.exchange("key", recv=dos)                                            # (1) key relay
    wrapped = chan.exchange("key", send={COMP0: [pubs[d] for d in dos]}, recv=[COMP0])[COMP0]
    chan.exchange("key", send={d: {"comp": wrapped["comp"], "wrapped": wrapped["wrapped"][i]}
                               for i, d in enumerate(dos)})
    sigma = streams.sigma_streams(seeds["sigma"], k, alg.iterations)
    explore_u = KeyedStream(seed_eps, "epsilon")
    bits: dict = {}
    core_start = time.perf_counter()
    for t in range(start + 1, budget + 1):
        ctx.progress(t, budget)
        explore = alg.explores and explore_u.row(t) <= alg.epsilon_at(t)
        for l in range(1, alg.iterations + 1):
            # (5) of the previous iteration, then (2): one round
            got = chan.exchange("core", send=bits, recv=() if explore else dos)
            perm = sigma[l - 1].row(t)                                               # (3) sigma_t
            if explore:
                permuted = None  # §5.4: one common score for all arms, drawn here
            else:
                permuted = b"".join([expect_bytes(got[dos[j]], SCORE_CT, dos[j], f"core t={t}")
                                     for j in perm])
            back = chan.exchange("permuted", send={COMP0: permuted}, recv=[COMP0])[COMP0]  # (3)(4)
            back = expect_bytes(back, k * BIT_CT, COMP0, f"permuted t={t}")
            bits = {dos[j]: back[p * BIT_CT:(p + 1) * BIT_CT] for p, j in enumerate(perm)}  # (5)
        if t % _PROGRESS_EVERY == 0:
            ctx.progress(t, budget)
    chan.exchange("core", send=bits)
    core_s = time.perf_counter() - core_start
    pk = paillier.public_key(setup["paillier_n"])
    sums = chan.exchange("sum", recv=dos)                                            # (6)
    try:
        total = paillier.add(pk, [sums[d] for d in dos])
    except ValueError as e:
        bad = next(d for d in dos if not _is_ciphertext(pk, sums[d]))
        raise ProtocolError(bad, "sum#0", str(e)) from None
    chan.send("sum", DC0, total)                                                     # (7)
    ctx.progress(budget, budget)
    return {"core_s": core_s, "core_steps": budget - start}


def _is_ciphertext(pk, c) -> bool:
    try:
        paillier.check_ciphertext(pk, c)
        return True
    except ValueError:
        return False


def _comp(ctx: PartyContext, view: list | None) -> dict:
    chan = ctx.chan
    setup = _recv_setup(ctx, "setup", CONTROLLER0)                                   # (1)
    (budget, alg), k = _algorithm_from(setup, CONTROLLER0), setup["arms"]
    pubs = chan.recv("key", CONTROLLER0)
    key, mine = os.urandom(32), KeyPair()
    chan.send("key", CONTROLLER0, {"comp": mine.public,
                                   "wrapped": [wrap_key(key, mine, p, KEY_CONTEXT) for p in pubs]})
    aead = Aead(key)
    start, fixed = ctx.resume() or (k, {"select": streams.protocol_seed(ctx.config, "select")})
    ctx.checkpoint_finished(fixed)  # Comp keeps no state from step to step
    select_u = streams.select_streams(fixed["select"], alg.iterations)
    unpack = struct.Struct(f"<{k}d").unpack
    reply: dict = {}
    equal = [0.0] * k
    one, zero = b"\x01", b"\x00"
    for t in range(start + 1, budget + 1):
        ctx.progress(t, budget)
        for l in range(1, alg.iterations + 1):
            tag = f"permuted t={t} l={l}"
            blob = chan.exchange("permuted", send=reply, recv=[CONTROLLER0])[CONTROLLER0]  # (3)
            u = select_u[l - 1].row(t)
            if blob is None:  # exploration step (§5.4): a position only Comp knows
                values, pos = equal, uniform_position(u, k)
            else:
                blob = expect_bytes(blob, k * SCORE_CT, CONTROLLER0, tag)
                try:
                    values = list(unpack(b"".join(aead.open_many(blob, SCORE_BYTES, _aad("score", t, l)))))
                except AuthenticationError as e:
                    raise ProtocolError(CONTROLLER0, tag, f"AES-GCM rejected the score at "
                                        f"position {e.index}: tampered or replayed") from None
                # sealed by a data owner Comp cannot name (sigma hides it): the relay is named
                expect_finite(values, CONTROLLER0, tag, "a data owner's score (relayed)")
                pos = alg.select_arm(l, t, values, u)                                # (4)
            if view is not None:
                view.append((t, l, values, pos))
            reply = {CONTROLLER0: aead.seal_many([one if j == pos else zero for j in range(k)],
                                                 _aad("bit", t, l))}
    chan.exchange("permuted", send=reply)
    return {}


def _data_owner(ctx: PartyContext) -> dict:
    chan, i = ctx.chan, ctx.index
    own = ctx.source()  # my arm: reward(t, n) of its n-th pull, at step t
    setup = _recv_setup(ctx, "setup", CONTROLLER0)                                   # (1)
    (budget, alg), k = _algorithm_from(setup, CONTROLLER0), ctx.section.arms
    pk = paillier.public_key(setup["paillier_n"])
    mine = KeyPair()
    keys = chan.exchange("key", send={CONTROLLER0: mine.public}, recv=[CONTROLLER0])[CONTROLLER0]
    try:
        aead = Aead(unwrap_key(keys["wrapped"], mine, keys["comp"], KEY_CONTEXT))
    except (ValueError, KeyError, TypeError) as e:
        raise ProtocolError(CONTROLLER0, "key#1", f"bad AES key transport: {e}") from None
    resumed = ctx.resume()
    if resumed is None:
        start, seeds = k, {"thompson": streams.protocol_seed(ctx.config, f"thompson/{i}")}
        arm = ArmState(rng=streams.thompson_rng(seeds["thompson"]))
        r = own.reward(i + 1, 1)  # t = i + 1: every arm is pulled once first
        arm.s, arm.n = r, 1
        alg.init_arm(arm, k)
        pulled, rewards = [i + 1], [r]
    else:
        start, st = resumed
        seeds, pulled, rewards = st["seeds"], st["pulled"], st["rewards"]
        own.load_state(st["source"])
        arm = ArmState(**st["arm"], rng=streams.thompson_rng(seeds["thompson"]))
        arm.rng.bit_generator.state = st["rng"]
    alphas = [KeyedStream(setup["seed_alpha"], f"alpha/{l}") for l in range(1, alg.iterations + 1)]
    explore_u = KeyedStream(setup["seed_epsilon"], "epsilon")
    pack = struct.Struct("<d").pack
    for t in range(start + 1, budget + 1):
        ctx.progress(t, budget)
        explore = alg.explores and explore_u.row(t) <= alg.epsilon_at(t)
        for l in range(1, alg.iterations + 1):
            if explore:
                send = None
            else:
                v = alg.compute_score(l, t, arm)                                     # (2)
                masked = streams.masked(alg, streams.mask(alphas[l - 1].row(t)), v)
                send = {CONTROLLER0: aead.seal(pack(masked), _aad("score", t, l))}
            item = chan.exchange("core", send=send, recv=[CONTROLLER0])[CONTROLLER0]  # (5)
            tag = f"core t={t} l={l}"
            try:
                bit = aead.open(expect_bytes(item, BIT_CT, CONTROLLER0, tag), _aad("bit", t, l))
            except AuthenticationError:
                raise ProtocolError(CONTROLLER0, tag, "AES-GCM rejected the pulling bit: "
                                    "tampered or replayed") from None
            if l < alg.iterations:
                alg.update(l, t, arm, bit[0])
            elif bit[0]:
                r = own.reward(t, arm.n + 1)
                arm.s += r
                arm.n += 1
                pulled.append(t)
                rewards.append(r)
        ctx.checkpoint(t, lambda: {"seeds": seeds, "source": own.state(), "pulled": pulled,
                                   "rewards": rewards,
                                   "arm": {f: v for f, v in vars(arm).items() if f != "rng"},
                                   "rng": arm.rng.bit_generator.state})
        if i == 0 and t % _PROGRESS_EVERY == 0:
            ctx.progress(t, budget)
    chan.send("sum", CONTROLLER0, paillier.encrypt(pk, arm.s))                       # (6)
    return {"pulled_at": pulled, "rewards": rewards, "s": arm.s, "n": arm.n}


# ---------------------------------------------------------------- reference and summary


def sources(cfg: Config, role: str, index: int, folder):
    """Data owner i its own arm (mpcbandit/data/samba_data.py); the others read nothing."""
    if role != DO:
        return no_data(folder, f"{role}.{index}")
    return samba_data.owner(cfg, index, folder, f"{DO}.{index}",
                            streams.protocol_seed(cfg, f"pull/{index}"))


def plaintext(cfg: Config, data_dir=None) -> dict:
    """The standard algorithm (Fig. 3/4) with the same seeds: same arms, same reward (Thm. 2);
    on every data owner's folder of data_dir if given (one process reads all the data)."""
    s: SambaSection = cfg.section
    alg = make_algorithm(s.algorithm, **s.params)
    k = s.arms

    def seed(purpose: str) -> bytes:
        return streams.protocol_seed(cfg, purpose)

    arms, rewards = play_standard(
        alg, [sources(cfg, DO, i, data_dir and data_dir / f"{DO}.{i}").reward for i in range(k)],
        s.budget, explore_u=KeyedStream(seed("epsilon"), "epsilon").row,
        sigma=[st.row for st in streams.sigma_streams(seed("sigma"), k, alg.iterations)],
        select_u=[st.row for st in streams.select_streams(seed("select"), alg.iterations)],
        thompson=[streams.thompson_rng(seed(f"thompson/{i}")) for i in range(k)])
    return {"steps": s.budget, "series": {"arms": arms, "rewards": rewards},
            "cumulative_reward": int(sum(rewards)), "algorithm": s.algorithm}


def summarize(cfg: Config, results: list[dict]) -> dict:
    """Arm sequence and rewards from the data owners' own records; the total from DC."""
    s: SambaSection = cfg.section
    arms: list = [None] * s.budget
    rewards: list = [None] * s.budget
    for r in results:
        if r["role"] == DO:
            out = r["output"]
            for t, rew in zip(out["pulled_at"], out["rewards"]):
                arms[t - 1], rewards[t - 1] = r["index"], rew
    missing = sum(a is None for a in arms)
    if missing:
        raise ProtocolError("do.*", "summary", f"{missing} steps have no pulled arm")
    dc = next(r for r in results if r["role"] == DC)
    ctl = next(r for r in results if r["role"] == CONTROLLER)
    cpu: dict[str, float] = {}
    for r in results:  # process CPU seconds (all threads) per role: Fig. 8(d)
        cpu[r["role"]] = cpu.get(r["role"], 0.0) + r["output"].get("cpu_s", 0.0)
    return {"steps": s.budget, "series": {"arms": arms, "rewards": rewards},
            "cumulative_reward": dc["output"]["cumulative_reward"],
            "algorithm": s.algorithm, "cpu_s_by_role": cpu, "core_s": ctl["output"]["core_s"]}


def run_inproc_samba(cfg: Config, *, comp_view: list | None = None, wrap: dict | None = None,
                     deadline_s: float = 30.0) -> dict:
    """All K + 3 parties as threads; returns the summary fields.

    wrap maps a party name to a function of its Channel returning the channel it should use
    (tests record or tamper with traffic that way); comp_view collects Comp's clear view.
    """
    from mpcbandit.protocols.inproc_runner import run_protocol_inproc

    hooks = wrap or {}
    results, _ = run_protocol_inproc(
        cfg, observe=lambda name, chan: hooks[name](chan) if name in hooks else None,
        run_role=lambda ctx: run_role(ctx, comp_view), deadline_s=deadline_s)
    return summarize(cfg, results)


def privacy_warnings(s: SambaSection) -> list[str]:
    """Settings under which a SAMBA run does not keep its promise."""
    out = []
    if not s.fresh_seeds:
        out.append("samba.fresh_seeds = false: masks, permutations and keys' randomness derive "
                   "from the public config seed, so any party can recompute them (reproduction mode)")
    if s.paillier_bits < MIN_PAILLIER_BITS:
        out.append(f"samba.paillier_bits = {s.paillier_bits}: keys this small can be factored")
    return out


def sends_ahead(s: SambaSection) -> int:
    """Every step answers the last one: a few messages of K items, each a handful of Paillier
    ciphertexts (2 x paillier_bits bits) under AES-GCM."""
    ciphertext = 2 * s.paillier_bits // 8
    return 4 * s.arms * (8 * ciphertext + MESSAGE_OVERHEAD)


def headline(s: dict) -> list[str]:
    """The reward total and the algorithm that earned it."""
    who = "the standard algorithm" if s["plaintext"] else "decrypted by the data client"
    return [f"cumulative reward {s['cumulative_reward']:g} over {s['steps']} steps "
            f"({s['algorithm']}, {who})"]


PROTOCOL = Protocol(name="samba", paper='Ciucanu et al. 2022, SAMBA: secure multi-armed bandits',
                    section=SambaSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, peers=peers,
                    privacy_warnings=privacy_warnings, sends_ahead=sends_ahead, checkpoints=True,
                    steps=lambda s: ("budget", s.arms), headline=headline, sources=sources,
                    split=lambda cfg, out, suffix: samba_data.split(cfg, out, suffix,
                                                                    owners(cfg.section.arms)))
