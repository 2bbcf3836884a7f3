"""A DP run says whether it learnt: its regret per round over the first and the last tenth of
the rounds (FedUCB: per agent), beside a uniformly random action's on the same action sets, in
summary.json (`regret_per_round`) and in the lines `mpcbandit run` prints."""

import numpy as np
import pytest

from mpcbandit.bandits.gap_env import GapEnvironment
from mpcbandit.bandits.jdp_linucb import JDP_STREAM
from mpcbandit.config import load_config
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc


def _random_level(seed: int, dims: int, actions: int, stream: str, steps: int, gap=0.1) -> float:
    env = GapEnvironment(seed, dims, actions, stream, gap)
    means = [env.action_set()[1] for _ in range(steps)]
    return float(np.mean([m.max() - m.mean() for m in means]))


def _summary(config: str, sets: list[str]) -> dict:
    cfg = load_config(config, sets)
    return get_protocol(cfg.protocol).summarize(cfg, run_protocol_inproc(cfg)[0]), cfg


def test_feducb_reports_each_agents_early_and_late_regret_and_a_random_actions():
    s, cfg = _summary("configs/feducb-synthetic.toml", ["feducb.horizon=40", "feducb.agents=3"])
    regret = np.array([a["regret"] for a in s["agents"]])
    r = s["regret_per_round"]
    assert r["window"] == 4
    assert r["first"] == pytest.approx(regret[:, :4].mean())
    assert r["last"] == pytest.approx(regret[:, -4:].mean())
    assert r["random_action"] == pytest.approx(np.mean(
        [_random_level(cfg.seed, 5, 10, f"agent{i}", 40) for i in range(3)]))
    line = get_protocol("feducb").headline(s)[-1]
    assert (f"{r['first']:.3f} over the first 4 rounds" in line
            and f"a uniformly random action's: {r['random_action']:.3f}" in line), line


def test_jdp_reports_its_early_and_late_regret_and_a_random_actions():
    s, cfg = _summary("configs/jdp-synthetic.toml", ["jdp.horizon=25"])
    regret = np.asarray(s["series"]["regret"])
    r = s["regret_per_round"]
    assert r["window"] == 2
    assert (r["first"], r["last"]) == (pytest.approx(regret[:2].mean()),
                                       pytest.approx(regret[-2:].mean()))
    assert r["random_action"] == pytest.approx(
        _random_level(cfg.seed, 5, 10, JDP_STREAM, 25, cfg.section.gap))
    assert f"over the last 2; a uniformly random action's: {r['random_action']:.3f}" in \
        get_protocol("jdp").headline(s)[-1]
