import math

import numpy as np
import pytest

from dp_helpers import config
from mpcbandit.bandits.graphs import build_graph, diameter, within_hops
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.dp.feducb import peers, summarize


@pytest.mark.parametrize("kind,n,edges,diam", [("line", 6, 5, 5), ("ring", 6, 6, 3),
                                                ("grid", 6, 7, 3), ("complete", 5, 10, 1)])
def test_graph_shapes(kind, n, edges, diam):
    adj = build_graph(kind, n)
    assert sum(len(a) for a in adj) == 2 * edges
    assert diameter(adj) == diam


def test_random_graph_is_connected_and_reproducible():
    a = build_graph("random", 12, seed=4, edge_prob=0.1)
    assert a == build_graph("random", 12, seed=4, edge_prob=0.1)
    assert len(within_hops(a, 0, 12)) == 12


@pytest.mark.parametrize("graph,gamma", [("line", 1), ("line", 2), ("ring", 2), ("grid", 1)])
def test_messages_reach_exactly_the_gamma_ball(graph, gamma):
    m, t = 6, 24
    cfg = config("feducb", mode="p2p", agents=m, dims=3, actions=4, horizon=t, noise="gaussian",
                 schedule="mt", graph=graph, gamma=gamma)
    results = run_protocol_inproc(cfg)[0]
    adj = build_graph(graph, m)
    for r in results:
        i, out = r["index"], r["output"]
        assert out["ball"] == within_hops(adj, i, gamma)
        assert all(h == out["ball"] for h in out["heard_from"])  # everyone in reach, no one beyond
        assert all(n == math.ceil(t / gamma) for n in out["releases_per_slot"])  # every use
        assert out["releases"] == sum(out["releases_per_slot"])
        assert peers(cfg.section, "agent", i) == [f"agent.{j}" for j in sorted(adj[i])]
    s = summarize(cfg, results)
    assert s["privacy"]["releases"] == math.ceil(t / gamma)
    assert np.array([a["arms"] for a in s["agents"]]).shape == (m, t)


def test_threshold_requests_trigger_releases_in_the_ball():
    cfg = config("feducb", mode="p2p", agents=5, dims=3, actions=4, horizon=40, noise="none",
                 schedule="threshold", threshold=2.0, graph="line", gamma=2)
    s = summarize(cfg, run_protocol_inproc(cfg)[0])
    assert s["sync_rounds"] >= 1
    assert all(0 < r <= 40 for r in (a["releases"] for a in s["agents"]))
