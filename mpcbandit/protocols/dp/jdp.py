"""Joint-DP LinUCB (Shariff & Sheffet 2018, Alg. 1, §4.1-4.2): learner, privatizer, users.

Parties: learner.0 chooses actions; privatizer.0 is the trusted entity holding the tree-based
mechanism over M_t = sum [x y]^T [x y]; env.0 is the stream of users, each with her action
set D_t and her reward. The learner never sees a reward or a past action set, only the noisy
prefix sums (V_t, u_t) released by the privatizer. Per round t (3 hops on the critical path):
  1. env -> learner: D_t;  privatizer -> learner: (V_t, u_t) = noisy sums of rounds < t  ("offer")
  2. learner -> env: a_t = argmax UCB with beta_t of Prop. 4                           ("choose")
  3. env -> privatizer: (x_t, y_t), y_t ~ Bernoulli(<x_t, theta*>)                    ("observe")
  4. privatizer: insert [x_t y_t]^T [x_t y_t] into the tree, release the next sums.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpcbandit.bandits.jdp_linucb import JDP_STREAM, jdp_arm
from mpcbandit.bodies import expect_array, expect_fields, expect_index, expect_real
from mpcbandit.config import Config, spec
from mpcbandit.data import dp_data
from mpcbandit.data.common_task import TaskRewards, prepare_task
from mpcbandit.data.folder import no_data
from mpcbandit.dp.accounting import NOISES, PrivacyParams, privacy_params
from mpcbandit.dp.privatizer import Privatizer, augmented_gram
from mpcbandit.errors import ConfigError
from mpcbandit.protocols import MESSAGE_OVERHEAD, PartyContext, Protocol
from mpcbandit.protocols.dp.common import (
    DATA,
    expect_statistics,
    learning_phrase,
    noise_off,
    noise_source,
    privacy_phrase,
    random_action_regret,
    regret_per_round,
    regret_series,
)
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

LEARNER, PRIVATIZER, ENV = "learner", "privatizer", "env"
NOISE_PURPOSE = "jdp/privatizer"


@dataclass(frozen=True)
class JdpSection(TaskRewards):
    """[jdp]: the environment, the horizon and the privacy budget."""

    dims: int = spec(5, min=1, max=512, doc="d, dimension of the actions")
    actions: int = spec(10, min=2, max=100_000, doc="K, actions per round")
    horizon: int = spec(200, min=1, max=100_000_000, doc="T, rounds")
    data: str = spec("gap", choices=DATA, doc="gap: the users of Dubey & Pentland's section 4.4; "
                                              "linear | mnist: a common task of the frontier")
    gap: float = spec(0.1, min=0.0, max=0.3, doc="the best action's least lead in mean reward "
                                                 "(best in [0.6, 0.7] + gap, the rest in [0.5, 0.6])")
    epsilon: float = spec(1.0, doc="privacy budget epsilon (> 0)")
    delta: float = spec(0.1, doc="privacy budget delta, in (0, 1)")
    noise: str = spec("gaussian", choices=NOISES,
                      doc="gaussian (shifted by 2 Upsilon) | wishart | shifted-wishart | none")
    lam: float = spec(1.0, doc="ridge regularizer when noise = none (> 0)")
    alpha: float = spec(0.1, doc="failure probability of the confidence bounds, in (0, 1)")
    reward_sigma: float = spec(0.5, min=0.0, doc="sub-Gaussian scale of the reward noise")
    seeded_noise: bool = spec(False, doc="noise PRG seeded from the config seed (tests, figures); "
                                         "false: from os.urandom")

    def validate(self, path: str) -> None:
        check_budget(self, path)
        self.check_task(path, ("dims", self.dims), ("actions", self.actions))


def check_budget(s, path: str) -> None:
    """Range checks shared by [jdp] and [feducb]."""
    if not s.epsilon > 0:
        raise ConfigError(f"{path}.epsilon", f"{s.epsilon!r} must be > 0")
    if not 0 < s.delta < 1:
        raise ConfigError(f"{path}.delta", f"{s.delta!r} must be in (0, 1)")
    if not 0 < s.alpha < 1:
        raise ConfigError(f"{path}.alpha", f"{s.alpha!r} must be in (0, 1)")
    if not s.lam > 0:
        raise ConfigError(f"{path}.lam", f"{s.lam!r} must be > 0")
    try:
        params_of(s, releases=max(getattr(s, "horizon", 1), 1))
    except ValueError as e:
        raise ConfigError(f"{path}.noise", str(e)) from None


def params_of(s: JdpSection, releases: int | None = None) -> PrivacyParams:
    """Shariff & Sheffet's noise and bounds: one release per round, n = T."""
    return privacy_params(s.noise, epsilon=s.epsilon, delta=s.delta, dims=s.dims,
                          releases=releases or s.horizon, alpha=s.alpha, lam=s.lam, delta_log_c=4.0)


def roles(s: JdpSection) -> list[tuple[str, int]]:
    """learner.0, privatizer.0, env.0."""
    return [(LEARNER, 0), (PRIVATIZER, 0), (ENV, 0)]


def peers(s: JdpSection, role: str, index: int) -> list[str]:
    """Everyone talks to everyone (three parties)."""
    return {LEARNER: [f"{PRIVATIZER}.0", f"{ENV}.0"], PRIVATIZER: [f"{LEARNER}.0", f"{ENV}.0"],
            ENV: [f"{LEARNER}.0", f"{PRIVATIZER}.0"]}[role]


def sources(cfg: Config, role: str, index: int, folder):
    """env.0 the server's users (mpcbandit/data/dp_data.py); the others read nothing."""
    if role != ENV:
        return no_data(folder, f"{role}.{index}")
    return dp_data.users(cfg, JDP_STREAM, folder, f"{ENV}.0", "jdp.horizon")


def run_role(ctx: PartyContext) -> dict:
    """One party's part of the T rounds (steps 1-4 of the module docstring)."""
    s: JdpSection = ctx.section
    params = params_of(s)
    learner, privatizer, env_name = f"{LEARNER}.0", f"{PRIVATIZER}.0", f"{ENV}.0"
    if ctx.role == LEARNER:
        start, st = ctx.resume() or (0, {"arms": [], "beta": []})
        arms, betas = st["arms"], st["beta"]
        for t in range(start + 1, s.horizon + 1):
            got = ctx.chan.exchange("offer", recv=[env_name, privatizer])  # 1.
            gram, vec = expect_statistics(got[privatizer], s.dims, privatizer, f"offer#{t}")
            offer = expect_array(got[env_name], (s.actions, s.dims), env_name, f"offer#{t}")
            a, beta = jdp_arm(gram, vec, offer, params, sigma=s.reward_sigma, alpha=s.alpha)  # 2.
            ctx.chan.exchange("choose", send={env_name: a})
            arms.append(a)
            betas.append(beta)
            ctx.checkpoint(t, lambda: {"arms": arms, "beta": betas})
            ctx.progress(t, s.horizon)
        return {"arms": arms, "beta": betas}
    if ctx.role == PRIVATIZER:
        priv = Privatizer(params, noise_source(ctx.config, s.seeded_noise, NOISE_PURPOSE))
        resumed = ctx.resume()
        if resumed:
            start, st = resumed
            priv.load_state(st["priv"])
            gram, vec, nodes = np.asarray(st["gram"]), np.asarray(st["vec"]), st["nodes"]
        else:
            start, (gram, vec), nodes = 0, priv.initial(), []
        for t in range(start + 1, s.horizon + 1):
            ctx.chan.exchange("offer", send={learner: {"gram": gram, "vec": vec}})  # 1.
            nodes.append(priv.tree.nodes_used)
            obs = expect_fields(ctx.chan.recv("observe", env_name), ("x", "y"), env_name, f"observe#{t}")  # 3.
            x = expect_array(obs["x"], (s.dims,), env_name, f"observe#{t}")
            gram, vec = priv.privatize(augmented_gram(x, expect_real(obs["y"], env_name, f"observe#{t}")))  # 4.
            ctx.checkpoint(t, lambda: {"priv": priv.state(), "gram": gram, "vec": vec,
                                       "nodes": nodes})
            ctx.progress(t, s.horizon)
        return {"nodes_used": nodes, "depth": priv.tree.depth}
    env = ctx.source()  # the users: their action sets and rewards
    start, st = ctx.resume() or (0, {"env": None, "arms": [], "rewards": [], "regret": []})
    if st["env"] is not None:
        env.load_state(st["env"])
    arms, rewards, regret = st["arms"], st["rewards"], st["regret"]
    for t in range(start + 1, s.horizon + 1):
        d_t = env.action_set(t - 1)
        ctx.chan.exchange("offer", send={learner: d_t})  # 1.
        a = expect_index(ctx.chan.recv("choose", learner), s.actions, learner, f"choose#{t}")
        y, loss = env.feedback(t - 1, a)
        ctx.chan.exchange("observe", send={privatizer: {"x": d_t[a], "y": y}})  # 3.
        arms.append(a)
        rewards.append(y)
        regret.append(loss)
        ctx.checkpoint(t, lambda: {"env": env.state(), "arms": arms, "rewards": rewards,
                                   "regret": regret})
        ctx.progress(t, s.horizon)
    return {"arms": arms, "rewards": rewards, "regret": regret}


def summarize(cfg: Config, results: list[dict]) -> dict:
    """Arms, rewards, regret, beta_t and the privacy parameters from the env and learner."""
    s: JdpSection = cfg.section
    out = {r["role"]: r["output"] for r in results}
    env, priv = out[ENV], out[PRIVATIZER]
    if out[LEARNER]["arms"] != env["arms"]:
        raise ValueError("learner.0 and env.0 disagree on the arms played")
    params = params_of(s)
    regret = np.asarray(env["regret"], dtype=np.float64)
    return {
        "steps": s.horizon,
        "series": {"arms": env["arms"], "rewards": env["rewards"], **regret_series(regret),
                   "beta": out[LEARNER]["beta"]},  # beta_t of Prop. 4, per round
        "cumulative_reward": float(np.sum(env["rewards"])),
        "cumulative_regret": float(regret.sum()),
        "regret_per_round": regret_per_round(
            regret, random_action_regret(cfg.seed, s, JDP_STREAM, len(regret))),
        "sync_rounds": s.horizon,  # one release of the tree per round
        "max_nodes_per_release": max(priv["nodes_used"]),
        "tree_depth": priv["depth"],
        "privacy": params.to_dict(),
    }


def plaintext(cfg: Config, data_dir=None) -> dict:
    """The same three roles with the noise switched off (ridge LinUCB), in-process (env.0
    reading its folder of data_dir, if given)."""
    off = noise_off(cfg)
    return summarize(off, run_protocol_inproc(off, data_dir=data_dir)[0])


def privacy_warnings(s: JdpSection) -> list[str]:
    """A run whose privatizing noise any party can recompute from the public config."""
    if s.noise == "none":
        return ["jdp.noise = 'none': no privacy at all (the non-private reference)"]
    if s.seeded_noise:
        return ["jdp.seeded_noise = true: the privatizer's noise derives from the public config "
                "seed, so anyone can subtract it (tests and figures only)"]
    return []


def sends_ahead(s: JdpSection) -> int:
    """Every message answers the last one: a few offers (K actions, a d x d Gram) at most."""
    return 4 * (8 * (s.dims * s.dims + s.dims + s.actions * s.dims) + MESSAGE_OVERHEAD)


def headline(s: dict) -> list[str]:
    """Final regret under the run's privacy, and whether the run learnt."""
    return [f"cumulative regret {s['cumulative_regret']:.2f} after {s['steps']} steps "
            f"({privacy_phrase(s['privacy'])})", learning_phrase(s["regret_per_round"], "round")]


PROTOCOL = Protocol(name="jdp", paper='Shariff & Sheffet 2018, joint-differentially-private LinUCB',
                    section=JdpSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, peers=peers, checkpoints=True,
                    privacy_warnings=privacy_warnings, sends_ahead=sends_ahead,
                    steps=lambda s: ("horizon", 1),
                    headline=headline, sources=sources,
                    split=lambda cfg, out, suffix: dp_data.split(cfg, out, suffix,
                                                                 {f"{ENV}.0": JDP_STREAM}),
                    prepare=lambda cfg, role: role == ENV and prepare_task(cfg))
