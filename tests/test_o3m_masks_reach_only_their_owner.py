"""The PMG's Q is Haar-orthogonal, and participant j receives Q^j and nothing of the others'."""

import numpy as np

from mpcbandit.config import load_config
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

CONFIG = "configs/o3m-synthetic.toml"


def _recording(log):
    def observe(name, chan):
        inner = chan.exchange

        def exchange(label, send=None, recv=(), **kw):
            got = inner(label, send=send, recv=recv, **kw)
            for peer, body in got.items():
                log.append((name, label, peer, body))
            return got
        chan.exchange = exchange
    return observe


def test_each_participant_receives_only_its_own_mask_block():
    cfg = load_config(CONFIG, ["o3m.iterations=3", "o3m.partition=[30, 10, 25, 35]",
                               "o3m.participants=4"])
    log = []
    run_protocol_inproc(cfg, observe=_recording(log))
    masks = [(name, body) for name, label, peer, body in log if peer == "pmg.0"]
    assert sorted(n for n, _ in masks) == ["ap.0", "pp.1", "pp.2", "pp.3"]  # one message each
    assert all(label == "mask" for name, label, peer, _ in log if peer == "pmg.0")
    by_name = dict(masks)
    q = np.hstack([by_name[n] for n in ("ap.0", "pp.1", "pp.2", "pp.3")])
    assert [by_name[n].shape for n in ("ap.0", "pp.1", "pp.2", "pp.3")] == [(100, 30), (100, 10),
                                                                            (100, 25), (100, 35)]
    np.testing.assert_allclose(q.T @ q, np.eye(100), atol=1e-12)
    assert not np.allclose(q, np.eye(100))
    assert {peer for name, _, peer, _ in log if name == "env.0"} == {"ap.0"}
    # a passive participant hears nothing else: its mask, then the AP's final "done"
    for name in ("pp.1", "pp.2", "pp.3"):
        got = [(label, peer, body) for n, label, peer, body in log if n == name]
        assert [(label, peer) for label, peer, _ in got] == [("mask", "pmg.0"), ("done", "ap.0")]
        assert got[1][2] is None


def test_peers_limit_who_talks_to_whom():
    cfg = load_config(CONFIG)
    proto = get_protocol("o3m")
    s = cfg.section
    assert proto.peers_of(s, "env", 0) == ["ap.0"]
    assert proto.peers_of(s, "pp", 2) == ["pmg.0", "ap.0"]
    assert proto.peers_of(s, "pmg", 0) == ["ap.0", "pp.1", "pp.2", "pp.3", "pp.4"]
    assert [p.name for p in cfg.parties()] == ["pmg.0", "ap.0", "pp.1", "pp.2", "pp.3", "pp.4",
                                               "env.0"]


def test_two_runs_draw_different_masks_with_the_same_seed():
    cfg = load_config(CONFIG, ["o3m.iterations=1"])
    blocks = []
    for _ in range(2):
        log = []
        run_protocol_inproc(cfg, observe=_recording(log))
        blocks.append(next(b for n, _, p, b in log if n == "ap.0" and p == "pmg.0"))
    assert not np.allclose(blocks[0], blocks[1])  # the mask is secret: not from the config seed
