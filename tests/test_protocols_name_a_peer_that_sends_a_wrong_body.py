"""Where a protocol receives a message it checks the body: a peer that sends the wrong type,
shape or dtype (or an index out of range) makes the receiver raise a ProtocolError naming that
peer and the message's tag, in every protocol outside the MPC engine (whose own checks are in
test_engine_names_a_peer_that_sends_a_wrong_body.py)."""

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

NAN_GRAM = np.eye(5)
NAN_GRAM[2, 3] = np.nan

CASES = [
    # config, overrides, sender, label, body sent in place of the real one, receiver's complaint
    ("demo-sum.toml", [], "input.1", "share", np.zeros(3), "expected a uint64 array"),
    ("demo-sum.toml", [], "compute.0", "open_to", "sum", "expected a uint64 array"),
    ("jdp-synthetic.toml", [], "learner.0", "choose", 99, "expected an index in 0..9, got 99"),
    ("jdp-synthetic.toml", [], "learner.0", "choose", "1", "expected an index in 0..9, got '1'"),
    ("jdp-synthetic.toml", [], "privatizer.0", "offer", {"gram": np.eye(2), "vec": np.zeros(2)},
     "expected a float64 array of shape (5, 5), got a float64 array (2, 2)"),
    ("jdp-synthetic.toml", [], "env.0", "observe", {"x": np.zeros(5), "y": "high"},
     "expected a finite number, got a str"),
    ("jdp-synthetic.toml", [], "env.0", "observe", {"y": 1.0}, "message lacks x"),
    ("feducb-synthetic.toml", ['feducb.schedule="threshold"'], "agent.1", "sync_flag", 1,
     "expected a bool, got an int"),
    ("feducb-synthetic.toml", ['feducb.schedule="threshold"'], "agent.1", "upload", {"gram": 0},
     "message lacks vec"),
    ("feducb-p2p.toml", [], "agent.1", "gossip", [{"id": "x", "kind": "sums", "slot": 0, "ttl": 1}],
     "message lacks origin"),
    ("feducb-p2p.toml", [], "agent.1", "gossip", {"id": "x"}, "expected a list of gossip items"),
    # a float array holding NaN or inf: named where it arrives, never learned from
    ("jdp-synthetic.toml", [], "privatizer.0", "offer", {"gram": NAN_GRAM, "vec": np.zeros(5)},
     "not finite"),
    ("jdp-synthetic.toml", [], "env.0", "offer", np.full((10, 5), np.inf), "not finite"),
    ("jdp-synthetic.toml", [], "env.0", "observe", {"x": np.full(5, np.nan), "y": 1.0},
     "not finite"),
    ("jdp-synthetic.toml", [], "env.0", "observe", {"x": np.zeros(5), "y": float("inf")},
     "expected a finite number, got inf"),
    ("feducb-synthetic.toml", ['feducb.schedule="threshold"'], "agent.1", "upload",
     {"gram": NAN_GRAM, "vec": np.zeros(5)}, "not finite"),
    ("feducb-synthetic.toml", ['feducb.schedule="mlogt"'], "agent.2", "upload",
     {"gram": np.eye(5), "vec": np.full(5, -np.inf)}, "not finite"),
    ("feducb-synthetic.toml", ['feducb.schedule="mlogt"'], "controller.0", "broadcast",
     {"gram": NAN_GRAM, "vec": np.zeros(5)}, "not finite"),
    ("feducb-p2p.toml", [], "agent.1", "gossip",
     [{"id": "s", "kind": "sums", "slot": 0, "origin": 1, "ttl": 1, "gram": NAN_GRAM,
       "vec": np.zeros(5)}], "not finite"),
    ("o3m-synthetic.toml", ["o3m.iterations=20"], "pp.2", "contexts",
     np.full((10, 100), np.nan), "not finite"),
    ("o3m-synthetic.toml", ["o3m.iterations=20"], "pmg.0", "mask", np.full((100, 20), np.inf),
     "not finite"),
]


def cheating(sender: str, label: str, body):
    """An observe hook: the sender's messages under label are replaced by body."""
    def observe(name, chan):
        if name != sender:
            return None
        honest = chan.exchange

        def exchange(lab, send=None, recv=(), **kw):
            if lab == label and send:
                send = dict.fromkeys(send, body)
            return honest(lab, send=send, recv=recv, **kw)
        chan.exchange = exchange
        return chan
    return observe


@pytest.mark.parametrize("config, overrides, sender, label, body, says", CASES,
                         ids=[f"{c[0].split('.')[0]}-{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_a_wrong_body_is_a_protocol_error_naming_the_sender(config, overrides, sender, label,
                                                            body, says):
    cfg = load_config(f"configs/{config}", overrides + [f"run.deadline_s={deadline(10):g}"])
    with pytest.raises(ProtocolError) as e:
        run_protocol_inproc(cfg, observe=cheating(sender, label, body))
    assert e.value.peer == sender and e.value.tag.startswith(f"{label}#"), e.value
    assert says in e.value.reason, e.value.reason


def test_samba_comp_names_the_relay_of_a_score_that_is_not_finite(monkeypatch):
    """A data owner's score travels sealed to Comp, relayed by the Controller: Comp cannot name
    the data owner (the permutation hides it), so it names the relay and the position."""
    from mpcbandit.protocols.samba import streams as samba_streams
    from tests.samba_support import samba_config

    monkeypatch.setattr(samba_streams, "masked", lambda alg, alpha, v: float("nan"))
    cfg = samba_config(budget=15, algorithm="ucb").with_overrides(
        [f"run.deadline_s={deadline(10):g}"])
    with pytest.raises(ProtocolError) as e:
        run_protocol_inproc(cfg)
    assert e.value.peer == "controller.0" and e.value.tag.startswith("permuted t="), e.value
    assert "not finite" in e.value.reason, e.value.reason


@pytest.mark.parametrize("sender", ["dc.0", "controller.0"])
def test_samba_setup_parameters_that_are_not_finite_name_their_sender(sender):
    from tests.samba_support import samba_config

    def observe(name, chan):
        if name != sender:
            return None
        honest = chan.exchange

        def exchange(lab, send=None, recv=(), **kw):
            if lab == "setup" and send:
                send = {p: dict(b, params=dict(b["params"], epsilon=float("nan")))
                        for p, b in send.items()}
            return honest(lab, send=send, recv=recv, **kw)
        chan.exchange = exchange
        return chan

    cfg = samba_config(budget=15).with_overrides([f"run.deadline_s={deadline(10):g}"])
    with pytest.raises(ProtocolError) as e:
        run_protocol_inproc(cfg, observe=observe)
    assert e.value.peer == sender and e.value.tag == "setup#0", e.value
    assert "epsilon" in e.value.reason and "finite" in e.value.reason, e.value.reason
