"""The shipped frontier runs at least one DP mechanism at a budget where it learns on the
frontier's task: FedUCB with a fixed radius at the config's largest epsilon pays well under a
random arm's regret over the frontier's own seeds (docs/frontier.md: at epsilon <= 8 no DP
row learns at T = 1000; measured over 8 seeds at epsilon 32 the mean was 76 against 210, the
frontier's seeds 1-3 giving 59)."""

import numpy as np

from mpcbandit.experiments.common import shipped_config
from mpcbandit.experiments.frontier import random_regret, read_frontier_config
from mpcbandit.experiments.frontier_mechanisms import MECHANISMS
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.shipped_configs import SHIPPED


def test_the_shipped_frontier_runs_a_dp_mechanism_at_a_budget_where_it_learns():
    task, names, epsilons = read_frontier_config(SHIPPED / "frontier.toml", paper=False)
    m = MECHANISMS["feducb-gaussian-beta1"]
    assert m.name in names and m.dp
    regrets = []
    for seed in task.seeds:  # seeded noise only so the test repeats itself
        cfg = shipped_config(m.config, m.overrides(task, seed, task.steps, max(epsilons))
                             + [f"seed={seed}", "feducb.seeded_noise=true"])
        summary = get_protocol("feducb").summarize(cfg, run_protocol_inproc(cfg)[0])
        regrets.append(m.run_regret(summary, task, seed))
    assert np.mean(regrets) < 0.6 * random_regret(task), (regrets, random_regret(task))
