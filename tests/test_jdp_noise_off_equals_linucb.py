import numpy as np

from dp_helpers import config, pooled_linucb_arms
from mpcbandit.bandits.jdp_linucb import JDP_STREAM, simulate_jdp
from mpcbandit.dp.noise import seeded_source
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.dp.jdp import NOISE_PURPOSE, PROTOCOL, params_of, summarize

D, K, T = 4, 6, 80


def test_jdp_without_noise_equals_linucb():
    cfg = config("jdp", dims=D, actions=K, horizon=T, noise="none")
    out = summarize(cfg, run_protocol_inproc(cfg)[0])
    ref = pooled_linucb_arms(cfg.seed, 1, D, K, T, stream=lambda i: JDP_STREAM)[:, 0]
    np.testing.assert_array_equal(out["series"]["arms"], ref)
    assert out["max_nodes_per_release"] <= out["tree_depth"]


def test_plaintext_reference_is_the_noise_free_run():
    cfg = config("jdp", dims=D, actions=K, horizon=T, noise="gaussian")
    ref = pooled_linucb_arms(cfg.seed, 1, D, K, T, stream=lambda i: JDP_STREAM)[:, 0]
    assert PROTOCOL.plaintext(cfg)["series"]["arms"] == ref.tolist()


def test_jdp_processes_equal_the_in_process_simulation_with_seeded_noise():
    for noise in ("gaussian", "wishart"):
        cfg = config("jdp", dims=D, actions=K, horizon=T, noise=noise, seeded_noise=True)
        out = summarize(cfg, run_protocol_inproc(cfg)[0])
        sim = simulate_jdp(dims=D, actions=K, horizon=T, params=params_of(cfg.section),
                           seed=cfg.seed, source=seeded_source(cfg.seed, NOISE_PURPOSE))
        np.testing.assert_array_equal(out["series"]["arms"], sim["arms"])
        np.testing.assert_allclose(out["series"]["regret"], sim["regret"])
