"""FedUCB (Dubey & Pentland 2020): federated LinUCB with a tree-based PRIVATIZER per agent.

mode = "centralized" (Alg. 1): controller.0 and agent.0..M-1. Every agent serves its own user
stream (simulated from the config seed, stream "agent<i>"), keeps local Gram/reward sums since
the last sync and, per round t:
  1-9.  choose x_t by UCB on V = S + U, u = s + u_local; observe y_t; update U, u, Q
  12.   threshold schedule: send its log-det flag to the controller, which answers whether
        anyone fired ("sync_flag" / "sync_decision"); fixed schedules need no message
  16-20. on a sync round: PRIVATIZER(Q) -> (U^, u^) to the controller ("upload"), which sums
        them and broadcasts (S, s) ("broadcast"); the local sums reset.
mode = "p2p" (§4.2, decentralized): agent.0..M-1 on a graph, no controller. Each agent keeps
gamma estimators used round-robin (slot g = (t-1) mod gamma), each with its own tree
(at most ceil(T/gamma) releases). Every round each agent makes one exchange with its graph
neighbours ("gossip"): items hop one edge per round and are forwarded until they have made
gamma hops (LOCAL protocol). When slot g's log-det rule fires an agent floods a sync request;
every agent within gamma hops privatizes its slot-g sums the next time it uses slot g and
floods them; S_g of an agent is the sum of the latest privatized sums of its gamma-ball.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mpcbandit.bandits.feducb import (
    SCHEDULES,
    FedEstimators,
    default_threshold,
    prop1_bound,
    sync_rounds_of,
)
from mpcbandit.bandits.graphs import GRAPHS, build_graph, diameter, within_hops
from mpcbandit.bodies import expect_bool, expect_fields, expect_index
from mpcbandit.config import Config, spec
from mpcbandit.data import dp_data
from mpcbandit.data.common_task import TaskRewards, prepare_task
from mpcbandit.data.folder import no_data
from mpcbandit.dp.accounting import NOISES, PrivacyParams, privacy_params
from mpcbandit.dp.privatizer import Privatizer
from mpcbandit.errors import ConfigError, ProtocolError
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
from mpcbandit.protocols.dp.jdp import check_budget

AGENT, CONTROLLER = "agent", "controller"


@dataclass(frozen=True)
class FeducbSection(TaskRewards):
    """[feducb]: agents, environment, privacy budget, synchronisation and (P2P) graph."""

    mode: str = spec("centralized", choices=("centralized", "p2p"),
                     doc="agents sync through a controller, or peer to peer over a graph")
    agents: int = spec(4, min=2, max=1024, doc="M, agents (one process each)")
    dims: int = spec(5, min=1, max=512, doc="d, dimension of the actions")
    actions: int = spec(10, min=2, max=100_000, doc="K, actions per round")
    horizon: int = spec(200, min=1, max=100_000_000, doc="T, rounds (every agent acts each round)")
    data: str = spec("gap", choices=DATA, doc="gap: the users of section 4.4; linear | mnist: a "
                                              "common task of the frontier (agent i: stream "
                                              "agent{i})")
    epsilon: float = spec(1.0, doc="privacy budget epsilon (> 0)")
    delta: float = spec(0.1, doc="privacy budget delta, in (0, 1)")
    noise: str = spec("gaussian", choices=NOISES,
                      doc="gaussian (shifted by 2 Upsilon) | wishart | shifted-wishart | none")
    schedule: str = spec("mlogt", choices=SCHEDULES,
                         doc="mlogt | m1.5 | mt (fixed, data-independent) | threshold (the "
                             "paper's log-det rule with D: outside the privacy proof, "
                             "feducb-paper.toml)")
    threshold: float = spec(0.0, min=0.0, doc="D of the log-det rule; 0: Theorem 1's choice")
    lam: float = spec(1.0, doc="ridge regularizer per agent when noise = none (> 0)")
    alpha: float = spec(0.1, doc="failure probability of the confidence bounds, in (0, 1)")
    beta: str | float = spec("theory", doc="UCB radius: 'theory' = Prop. 2's beta_t, or a number "
                             "used in its place (the paper's figures need a tuned one it does "
                             "not state; the summary keeps Prop. 2's)")
    reward_sigma: float = spec(0.5, min=0.0, doc="sub-Gaussian scale of the reward noise")
    seeded_noise: bool = spec(False, doc="noise PRGs seeded from the config seed (tests, figures)")
    graph: str = spec("ring", choices=GRAPHS, doc="p2p: communication graph")
    gamma: int = spec(1, min=1, max=1024, doc="p2p: hops a message travels = round-robin estimators")
    edge_prob: float = spec(0.5, min=0.0, max=1.0, doc="p2p, graph = random: extra-edge probability")
    graph_seed: int = spec(0, min=0, doc="p2p, graph = random: seed of the (public) graph")

    def validate(self, path: str) -> None:
        check_budget(self, path)
        self.check_task(path, ("dims", self.dims), ("actions", self.actions))
        if isinstance(self.beta, str) and self.beta != "theory":
            raise ConfigError(f"{path}.beta", f"{self.beta!r}: 'theory' or a number > 0")
        if not isinstance(self.beta, str) and not self.beta > 0:
            raise ConfigError(f"{path}.beta", f"{self.beta!r} must be > 0 (or 'theory')")
        if self.mode == "p2p":
            if self.gamma > self.horizon:
                raise ConfigError(f"{path}.gamma", f"{self.gamma} estimators but only "
                                  f"{self.horizon} rounds (horizon)")
            diam = diameter(graph_of(self))
            if self.gamma > max(diam, 1):
                raise ConfigError(f"{path}.gamma", f"{self.gamma} exceeds the diameter {diam} "
                                  f"of the {self.graph} graph on {self.agents} agents")


def fixed_beta(s: FeducbSection) -> float | None:
    """The configured UCB radius, None for Prop. 2's."""
    return None if s.beta == "theory" else float(s.beta)


def releases_of(s: FeducbSection) -> int:
    """n, the tree's budget per estimator: the fixed schedule's length, else T (Remark 4);
    in P2P each of the gamma trees serves at most ceil(T/gamma) rounds (Remark 5)."""
    if s.mode == "p2p":
        return math.ceil(s.horizon / s.gamma)
    fixed = sync_rounds_of(s.schedule, s.agents, s.horizon)
    return len(fixed) if fixed is not None else s.horizon


def params_of(s: FeducbSection) -> PrivacyParams:
    """Dubey & Pentland's PRIVATIZER noise and bounds, union bound over n M (x gamma) releases."""
    return privacy_params(s.noise, epsilon=s.epsilon, delta=s.delta, dims=s.dims,
                          releases=releases_of(s), alpha=s.alpha, lam=s.lam,
                          union_factor=s.agents * (s.gamma if s.mode == "p2p" else 1),
                          delta_log_c=2.0)


def threshold_of(s: FeducbSection, params: PrivacyParams) -> float:
    """D: the configured threshold, or Theorem 1's 2Td / (log(rho_max/rho_min + T/(d rho_min)) + 1)."""
    return s.threshold or default_threshold(s.horizon, s.dims, params.rho_min, params.rho_max)


def graph_of(s: FeducbSection) -> list[set[int]]:
    """The P2P communication graph (public: every agent builds the same one)."""
    return build_graph(s.graph, s.agents, seed=s.graph_seed, edge_prob=s.edge_prob)


def roles(s: FeducbSection) -> list[tuple[str, int]]:
    """controller.0 (centralized only) and agent.0..M-1."""
    agents = [(AGENT, i) for i in range(s.agents)]
    return agents if s.mode == "p2p" else [(CONTROLLER, 0)] + agents


def peers(s: FeducbSection, role: str, index: int) -> list[str]:
    """P2P: the graph's edges; centralized: the star around the controller."""
    if s.mode == "p2p":
        return [f"{AGENT}.{j}" for j in sorted(graph_of(s)[index])]
    if role == CONTROLLER:
        return [f"{AGENT}.{i}" for i in range(s.agents)]
    return [f"{CONTROLLER}.0"]


def sources(cfg: Config, role: str, index: int, folder):
    """Agent i its own users (mpcbandit/data/dp_data.py); the controller reads nothing."""
    if role != AGENT:
        return no_data(folder, f"{role}.{index}")
    return dp_data.users(cfg, f"agent{index}", folder, f"{AGENT}.{index}", "feducb.horizon")


def run_role(ctx: PartyContext) -> dict:
    """Controller, centralized agent or P2P agent, by mode and role."""
    s: FeducbSection = ctx.section
    if s.mode == "p2p":
        return _p2p_agent(ctx)
    return _controller(ctx) if ctx.role == CONTROLLER else _central_agent(ctx)


def _controller(ctx: PartyContext) -> dict:
    s: FeducbSection = ctx.section
    agents = [f"{AGENT}.{i}" for i in range(s.agents)]
    fixed = sync_rounds_of(s.schedule, s.agents, s.horizon)
    fixed_set = set(fixed or ())
    start, st = ctx.resume() or (0, {"sync_at": []})
    sync_at = st["sync_at"]
    for t in range(start + 1, s.horizon + 1):
        if fixed is None:  # 12. anyone over the threshold?
            flags = ctx.chan.exchange("sync_flag", recv=agents)
            sync = any([expect_bool(flags[a], a, f"sync_flag#{t}") for a in agents])
            ctx.chan.exchange("sync_decision", send={a: sync for a in agents})
        else:
            sync = t in fixed_set
        if sync:  # 17-19. sum the privatized uploads and broadcast
            got = ctx.chan.exchange("upload", recv=agents)
            uploads = [expect_statistics(got[a], s.dims, a, f"upload#{t}") for a in agents]
            gram, vec = sum(u[0] for u in uploads), sum(u[1] for u in uploads)
            ctx.chan.exchange("broadcast", send={a: {"gram": gram, "vec": vec} for a in agents})
            sync_at.append(t)
        ctx.checkpoint(t, lambda: {"sync_at": sync_at})
        ctx.progress(t, s.horizon)
    return {"sync_at": sync_at}


def _central_agent(ctx: PartyContext) -> dict:
    s: FeducbSection = ctx.section
    params = params_of(s)
    threshold = threshold_of(s, params)
    ctrl = f"{CONTROLLER}.0"
    env = ctx.source()  # my users: their action sets and rewards
    priv = Privatizer(params, noise_source(ctx.config, s.seeded_noise, f"feducb/agent{ctx.index}"))
    est = FedEstimators(1, s.dims, params, s.agents, sigma=s.reward_sigma, alpha=s.alpha,
                        beta=fixed_beta(s))
    me = np.array([0])
    fixed = sync_rounds_of(s.schedule, s.agents, s.horizon)
    fixed_set = set(fixed or ())
    start, st = ctx.resume() or (0, None)
    if st is not None:
        env.load_state(st["env"])
        priv.load_state(st["priv"])
        est.load_state(st["est"])
    arms, rewards, regret, betas = (([], [], [], []) if st is None else
                                    (st["arms"], st["rewards"], st["regret"], st["beta"]))
    for t in range(start + 1, s.horizon + 1):
        ctx_t = env.action_set(t - 1)  # 5.
        a = int(est.choose(me, ctx_t[None])[0])  # 4, 6-8.
        y, loss = env.feedback(t - 1, a)  # 9.
        est.observe(me, ctx_t[a][None], np.array([y]))  # 10-11.
        if fixed is None:  # 12-14.
            ctx.chan.exchange("sync_flag", send={ctrl: bool(est.sync_wanted(me, threshold)[0])})
            sync = expect_bool(ctx.chan.recv("sync_decision", ctrl), ctrl, f"sync_decision#{t}")
        else:
            sync = t in fixed_set
        if sync:  # 16-21.
            gram, vec = priv.privatize(est.take_local(me)[0])
            ctx.chan.exchange("upload", send={ctrl: {"gram": gram, "vec": vec}})
            gram, vec = expect_statistics(ctx.chan.recv("broadcast", ctrl), s.dims, ctrl, f"broadcast#{t}")
            est.set_synced(me, gram[None], vec[None])
        arms.append(a)
        rewards.append(y)
        regret.append(loss)
        betas.append(float(est.last_beta[0]))
        ctx.checkpoint(t, lambda: {"env": env.state(), "priv": priv.state(), "est": est.state(),
                                   "arms": arms, "rewards": rewards, "regret": regret,
                                   "beta": betas})
        ctx.progress(t, s.horizon)
    return {"arms": arms, "rewards": rewards, "regret": regret, "beta": betas,
            "releases": priv.tree.count}


def _gossip_items(body, s: FeducbSection, peer: str, tag: str) -> list[dict]:
    """A neighbour's gossip: a list of requests and sums, each field checked (the sums'
    statistics are checked where they are used)."""
    if not isinstance(body, list):
        raise ProtocolError(peer, tag, f"expected a list of gossip items, got a {type(body).__name__}")
    for item in body:
        expect_fields(item, ("id", "kind", "slot", "ttl"), peer, tag)
        if type(item["id"]) is not str or item["kind"] not in ("req", "sums") or type(item["ttl"]) is not int:
            raise ProtocolError(peer, tag, f"bad gossip item id={item['id']!r:.40} "
                                f"kind={item['kind']!r:.20} ttl={item['ttl']!r:.20}")
        expect_index(item["slot"], s.gamma, peer, tag)
        if item["kind"] == "sums":
            expect_index(expect_fields(item, ("origin",), peer, tag)["origin"], s.agents, peer, tag)
    return body


def _p2p_agent(ctx: PartyContext) -> dict:
    s: FeducbSection = ctx.section
    params = params_of(s)
    threshold = threshold_of(s, params)
    i, gam = ctx.index, s.gamma
    adj = graph_of(s)
    nbrs = [f"{AGENT}.{j}" for j in sorted(adj[i])]
    ball = within_hops(adj, i, gam)  # N_gamma(i): whose sums make up my S
    env = ctx.source()  # my users: their action sets and rewards
    privs = [Privatizer(params, noise_source(ctx.config, s.seeded_noise, f"feducb/agent{i}/slot{g}"))
             for g in range(gam)]
    est = FedEstimators(gam, s.dims, params, len(ball), sigma=s.reward_sigma, alpha=s.alpha,
                        beta=fixed_beta(s))
    base = (params.rho_min * np.eye(s.dims), np.zeros(s.dims))  # before an agent's first message
    latest: list[dict[int, tuple]] = [{} for _ in range(gam)]
    pending = [False] * gam
    seen: set[str] = set()
    outbox: list[dict] = []
    fixed = sync_rounds_of(s.schedule, s.agents, s.horizon)
    fixed_set = set(fixed or ())
    arms, rewards, regret, betas = [], [], [], []
    requests = releases = 0
    start, st = ctx.resume() or (0, None)
    if st is not None:  # go on from the checkpoint of round `start`
        env.load_state(st["env"])
        for pr, ps in zip(privs, st["privs"]):
            pr.load_state(ps)
        est.load_state(st["est"])
        latest = [{int(k): (np.asarray(gm), np.asarray(v)) for k, gm, v in slot}
                  for slot in st["latest"]]
        pending, seen, outbox = list(st["pending"]), set(st["seen"]), st["outbox"]
        arms, rewards, regret, betas = st["arms"], st["rewards"], st["regret"], st["beta"]
        requests, releases = st["requests"], st["releases"]

    def state() -> dict:
        return {"env": env.state(), "privs": [pr.state() for pr in privs], "est": est.state(),
                "latest": [[[k, gm, v] for k, (gm, v) in slot.items()] for slot in latest],
                "pending": pending, "seen": sorted(seen), "outbox": outbox, "arms": arms,
                "rewards": rewards, "regret": regret, "beta": betas, "requests": requests,
                "releases": releases}

    def refresh(g: int) -> None:
        parts = [latest[g].get(k, base) for k in ball]
        est.set_synced(np.array([g]), sum(p[0] for p in parts)[None], sum(p[1] for p in parts)[None])

    for t in range(start + 1, s.horizon + 1):
        g = (t - 1) % gam  # round-robin estimator (subsampling)
        slot = np.array([g])
        ctx_t = env.action_set(t - 1)
        a = int(est.choose(slot, ctx_t[None])[0])
        y, loss = env.feedback(t - 1, a)
        est.observe(slot, ctx_t[a][None], np.array([y]))
        fires = bool(est.sync_wanted(slot, threshold)[0]) if fixed is None else t in fixed_set
        if fires:  # flood a sync request for slot g
            requests += 1
            pending[g] = True
            outbox.append({"id": f"req/{i}/{t}", "kind": "req", "slot": g, "ttl": gam})
        if pending[g]:  # privatize slot g (once per use of the slot) and flood the sums
            gram, vec = privs[g].privatize(est.take_local(slot)[0])
            releases += 1
            latest[g][i] = (gram, vec)
            refresh(g)
            pending[g] = False
            outbox.append({"id": f"sums/{i}/{t}", "kind": "sums", "slot": g, "origin": i, "t": t,
                           "gram": gram, "vec": vec, "ttl": gam})
        got = ctx.chan.exchange("gossip", send={n: outbox for n in nbrs}, recv=nbrs)
        outbox = []
        dirty = set()
        for n in nbrs:
            for item in _gossip_items(got[n], s, n, f"gossip#{t}"):
                if item["id"] in seen:
                    continue
                seen.add(item["id"])
                h = item["slot"]
                if item["kind"] == "req":
                    pending[h] = True
                else:
                    latest[h][item["origin"]] = expect_statistics(item, s.dims, n, f"gossip#{t}")
                    dirty.add(h)
                if item["ttl"] > 1:
                    outbox.append(dict(item, ttl=item["ttl"] - 1))
        for h in sorted(dirty):
            refresh(h)
        arms.append(a)
        rewards.append(y)
        regret.append(loss)
        betas.append(float(est.last_beta[g]))
        ctx.checkpoint(t, state)
        ctx.progress(t, s.horizon)
    return {"arms": arms, "rewards": rewards, "regret": regret, "beta": betas, "requests": requests,
            "releases": releases, "releases_per_slot": [pr.tree.count for pr in privs], "ball": ball,
            "heard_from": [sorted(latest[g]) for g in range(gam)]}


def summarize(cfg: Config, results: list[dict]) -> dict:
    """Per-agent arms, rewards, regret and beta; group regret, sync rounds, privacy parameters."""
    s: FeducbSection = cfg.section
    agents = sorted((r for r in results if r["role"] == AGENT), key=lambda r: r["index"])
    outs = [r["output"] for r in agents]
    rewards = np.array([o["rewards"] for o in outs], dtype=np.float64)  # M x T
    regret = np.array([o["regret"] for o in outs], dtype=np.float64)
    params = params_of(s)
    threshold = threshold_of(s, params)
    records = [{"index": r["index"], "arms": o["arms"], "rewards": o["rewards"], "regret": o["regret"],
                "cumulative_regret": float(np.sum(o["regret"])),
                "beta": o["beta"]}  # beta_{i,t} of Prop. 2, per round
               for r, o in zip(agents, outs)]
    fields = {
        "steps": s.horizon,
        "series": {"rewards": rewards.sum(axis=0).tolist(), **regret_series(regret.sum(axis=0))},
        "agents": records,
        "cumulative_reward": float(rewards.sum()),
        "cumulative_regret": float(regret.sum()),
        "regret_per_agent": float(regret.sum()) / s.agents,
        "regret_per_round": regret_per_round(regret, [
            random_action_regret(cfg.seed, s, f"agent{r['index']}", regret.shape[1]) for r in agents]),
        "mode": s.mode,
        "schedule": s.schedule,
        "threshold": threshold if s.schedule == "threshold" else None,
        "privacy": params.to_dict(),
        # None: the agents used the theoretical beta (agents[].beta); else the fixed radius
        "beta_fixed": fixed_beta(s),
    }
    if s.mode == "centralized":
        ctrl = next(r for r in results if r["role"] == CONTROLLER)["output"]
        fields |= {"sync_rounds": len(ctrl["sync_at"]), "sync_at": ctrl["sync_at"],
                   "sync_messages": 2 * s.agents * len(ctrl["sync_at"]),
                   "prop1_bound": prop1_bound(s.horizon, s.dims, threshold, params.rho_min,
                                              params.rho_max)}
    else:
        fields |= {"sync_rounds": int(sum(o["requests"] for o in outs)), "graph": s.graph,
                   "gamma": s.gamma}
        for rec, o in zip(records, outs):
            rec |= {"releases": o["releases"], "ball_size": len(o["ball"])}
    return fields


def plaintext(cfg: Config, data_dir=None) -> dict:
    """The same roles with the noise switched off, in-process (each agent reading its folder
    of data_dir, if given)."""
    off = noise_off(cfg)
    return summarize(off, run_protocol_inproc(off, data_dir=data_dir)[0])


def privacy_warnings(s: FeducbSection) -> list[str]:
    """What in a FedUCB run falls outside the differential-privacy guarantee."""
    out = []
    if s.noise == "none":
        out.append("feducb.noise = 'none': no privacy at all (the non-private reference)")
    elif s.seeded_noise:
        out.append("feducb.seeded_noise = true: the privatizers' noise derives from the public "
                   "config seed, so anyone can subtract it (tests and figures only)")
    if s.schedule == "threshold":
        out.append("feducb.schedule = 'threshold': the un-noised, data-dependent sync trigger is "
                   "sent every round, outside the privacy proof; mlogt, m1.5 and mt are "
                   "data-independent")
    return out


def sends_ahead(s: FeducbSection) -> int:
    """Agents move in step: a round's messages carry at most one d x d Gram and vector per
    agent and hop (p2p gossip forwards for gamma hops)."""
    per_round = s.agents * (s.gamma + 1) * (8 * (s.dims * s.dims + s.dims) + MESSAGE_OVERHEAD)
    return 4 * per_round


def headline(s: dict) -> list[str]:
    """Group and per-agent regret, syncs, privacy and the radius used."""
    radius = "theoretical beta" if s["beta_fixed"] is None else f"fixed beta = {s['beta_fixed']:g}"
    return [f"group regret {s['cumulative_regret']:.2f} ({s['regret_per_agent']:.2f} per agent) after "
            f"{s['steps']} steps of {len(s['agents'])} agents, {s['sync_rounds']} "
            f"{'syncs' if s['mode'] == 'centralized' else 'statistic requests'}",
            f"{privacy_phrase(s['privacy'])}, {radius}",
            learning_phrase(s["regret_per_round"], "agent and round")]


PROTOCOL = Protocol(name="feducb", paper='Dubey & Pentland 2020, differentially-private federated LinUCB (FedUCB)',
                    section=FeducbSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, peers=peers, checkpoints=True,
                    privacy_warnings=privacy_warnings, sends_ahead=sends_ahead,
                    steps=lambda s: ("horizon", s.gamma if s.mode == "p2p" else 1),
                    headline=headline, sources=sources,
                    split=lambda cfg, out, suffix: dp_data.split(cfg, out, suffix, {
                        f"{AGENT}.{i}": f"agent{i}" for i in range(cfg.section.agents)}),
                    prepare=lambda cfg, role: role == AGENT and prepare_task(cfg))
