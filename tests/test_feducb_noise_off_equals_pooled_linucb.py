import numpy as np

from dp_helpers import config, pooled_linucb_arms
from mpcbandit.bandits.feducb import simulate_centralized
from mpcbandit.dp.noise import seeded_source
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.dp.feducb import params_of, summarize, threshold_of

M, D, K, T = 3, 4, 6, 60


def agent_arms(summary: dict) -> np.ndarray:
    """The T x M matrix of every agent's actions in a FedUCB summary."""
    return np.array([a["arms"] for a in summary["agents"]]).T


def _arms(cfg) -> np.ndarray:
    return agent_arms(summarize(cfg, run_protocol_inproc(cfg)[0]))


def test_centralized_sync_every_round_without_noise_equals_pooled_linucb():
    cfg = config("feducb", mode="centralized", agents=M, dims=D, actions=K, horizon=T,
                 noise="none", schedule="mt")
    arms = _arms(cfg)
    ref = pooled_linucb_arms(cfg.seed, M, D, K, T)
    assert arms.shape == (T, M)
    np.testing.assert_array_equal(arms, ref)
    assert len(set(ref.ravel())) > 1  # not a degenerate all-same-arm run


def test_p2p_complete_graph_one_hop_every_round_without_noise_equals_pooled_linucb():
    cfg = config("feducb", mode="p2p", agents=M, dims=D, actions=K, horizon=T, noise="none",
                 schedule="mt", graph="complete", gamma=1)
    np.testing.assert_array_equal(_arms(cfg), pooled_linucb_arms(cfg.seed, M, D, K, T))


def test_agent_processes_equal_the_in_process_simulation_with_seeded_noise():
    """The figure sweeps' simulation runs the protocol's maths: same arms, same syncs."""
    cfg = config("feducb", mode="centralized", agents=M, dims=D, actions=K, horizon=T,
                 noise="gaussian", schedule="threshold", threshold=5.0, seeded_noise=True)
    out = summarize(cfg, run_protocol_inproc(cfg)[0])
    s = cfg.section
    sim = simulate_centralized(agents=M, dims=D, actions=K, horizon=T, params=params_of(s),
                               schedule=s.schedule, threshold=threshold_of(s, params_of(s)),
                               seed=cfg.seed,
                               source=lambda i: seeded_source(cfg.seed, f"feducb/agent{i}"))
    np.testing.assert_array_equal(agent_arms(out), sim["arms"])
    assert out["sync_at"] == sim["sync_at"] and len(sim["sync_at"]) >= 2
    np.testing.assert_allclose(out["series"]["regret"], sim["regret"])


def test_rarer_syncs_do_change_the_arms():
    """The equality above has teeth: with a log-det threshold the agents drift apart."""
    cfg = config("feducb", mode="centralized", agents=M, dims=D, actions=K, horizon=T,
                 noise="none", schedule="threshold", threshold=50.0)
    assert not np.array_equal(_arms(cfg), pooled_linucb_arms(cfg.seed, M, D, K, T))
