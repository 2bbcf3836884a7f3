"""Everything the AP receives from a passive participant is Q^j x^j, never x^j itself."""

import numpy as np

from mpcbandit.config import load_config
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.o3m.protocol import participant_stream


def test_ap_receives_only_masked_contexts_and_rewards():
    cfg = load_config("configs/o3m-synthetic.toml", ["o3m.iterations=25"])
    received, masks = [], {}

    def observe(name, chan):
        inner = chan.exchange

        def exchange(label, send=None, recv=(), **kw):
            got = inner(label, send=send, recv=recv, **kw)
            if name == "ap.0":
                received.extend((label, peer, body) for peer, body in got.items())
            elif label == "mask" and "pmg.0" in got:
                masks[name] = got["pmg.0"]
            return got
        chan.exchange = exchange

    run_protocol_inproc(cfg, observe=observe)
    s = cfg.section
    offsets = np.cumsum([0] + s.partition)
    streams = {j: participant_stream(cfg, j) for j in range(1, s.participants)}
    per_round = {}
    for label, peer, body in received:
        if peer == "env.0":
            assert label == "feedback" and isinstance(body, float)
            continue
        if peer == "pmg.0":
            assert label == "mask" and body.shape == (100, 20)
            continue
        assert label == "contexts" and peer.startswith("pp.")
        j = int(peer.split(".")[1])
        t = per_round[j] = per_round.get(j, -1) + 1
        raw = streams[j].features(t)
        assert body.shape == (s.arms, s.dims)
        np.testing.assert_allclose(body, raw @ masks[peer].T, atol=1e-14)
        padded = np.zeros((s.arms, s.dims))
        padded[:, offsets[j]:offsets[j + 1]] = raw
        # the raw slice appears nowhere: not as the array, not zero-padded, not as a sub-block
        assert np.abs(body - padded).max() > 1e-3
        assert not any(np.allclose(body[:, a:a + s.partition[j]], raw, atol=1e-6)
                       for a in range(s.dims - s.partition[j] + 1))
    assert per_round == {j: 24 for j in range(1, s.participants)}
    assert {label for label, _, _ in received} == {"mask", "contexts", "feedback"}


def test_malformed_masked_contexts_are_rejected_naming_peer_and_tag():
    import pytest

    from mpcbandit.errors import ProtocolError

    cfg = load_config("configs/o3m-synthetic.toml", ["o3m.iterations=3"])

    def observe(name, chan):
        if name != "pp.2":
            return
        inner = chan.exchange

        def exchange(label, send=None, recv=(), **kw):
            if label == "contexts":  # a PP that sends its raw (K x d_j) slice instead
                send = {p: b[:, :20] for p, b in send.items()}
            return inner(label, send=send, recv=recv, **kw)
        chan.exchange = exchange

    with pytest.raises(ProtocolError) as e:
        run_protocol_inproc(cfg, observe=observe)
    assert e.value.peer == "pp.2" and e.value.tag == "contexts#0"
