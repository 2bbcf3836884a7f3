"""Synchronisation rounds of centralized FedUCB against Proposition 1's bound at threshold D."""

import pytest

from dp_helpers import config
from mpcbandit.bandits.feducb import default_threshold, prop1_bound, simulate_centralized
from mpcbandit.dp.noise import seeded_source
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.dp.feducb import params_of, summarize

M, D, K, T = 4, 5, 8, 400


def _syncs(noise: str, threshold: float) -> tuple[int, float]:
    cfg = config("feducb", agents=M, dims=D, actions=K, horizon=T, noise=noise,
                 schedule="threshold", threshold=threshold, seeded_noise=True)
    p = params_of(cfg.section)
    sim = simulate_centralized(agents=M, dims=D, actions=K, horizon=T, params=p,
                               schedule="threshold", threshold=threshold, seed=cfg.seed,
                               source=lambda i: seeded_source(cfg.seed, f"feducb/agent{i}"))
    return len(sim["sync_at"]), prop1_bound(T, D, threshold, p.rho_min, p.rho_max)


@pytest.mark.parametrize("threshold", [0.5, 2.0, 10.0, 50.0])
def test_sync_rounds_within_prop1_bound_without_noise(threshold):
    n, bound = _syncs("none", threshold)
    assert 1 <= n <= bound
    # and the rule does react to D: a tenth of D syncs more often
    if threshold >= 2.0:
        assert _syncs("none", threshold / 10)[0] > n


@pytest.mark.parametrize("noise", ["gaussian", "wishart"])
def test_sync_rounds_within_prop1_bound_at_theorem1_threshold(noise):
    cfg = config("feducb", agents=M, dims=D, actions=K, horizon=T, noise=noise)
    p = params_of(cfg.section)
    threshold = default_threshold(T, D, p.rho_min, p.rho_max)
    n, bound = _syncs(noise, threshold)
    assert n <= bound


def test_controller_counts_the_sync_rounds_the_agents_make():
    cfg = config("feducb", agents=3, dims=3, actions=5, horizon=60, noise="none",
                 schedule="threshold", threshold=1.0)
    out = summarize(cfg, run_protocol_inproc(cfg)[0])
    assert 2 <= out["sync_rounds"] == len(out["sync_at"]) <= out["prop1_bound"]
    assert out["sync_messages"] == 2 * 3 * out["sync_rounds"]


def test_fixed_schedules_sync_the_advertised_number_of_times():
    for schedule, want in (("mt", 64), ("mlogt", 7), ("m1.5", 3)):
        cfg = config("feducb", agents=9, dims=3, actions=5, horizon=64, noise="none",
                     schedule=schedule)
        out = summarize(cfg, run_protocol_inproc(cfg)[0])
        assert out["sync_rounds"] == want, schedule
        assert out["privacy"]["releases"] == want
