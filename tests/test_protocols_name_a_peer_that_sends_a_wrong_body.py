"""Where a protocol receives a message it checks the body: a peer that sends the wrong type,
shape or dtype (or an index out of range) makes the receiver raise a ProtocolError naming that
peer and the message's tag, in every protocol outside the MPC engine (whose own checks are in
test_engine_names_a_peer_that_sends_a_wrong_body.py)."""

import numpy as np
import pytest

from mpcbandit.config import load_config
from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

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
    cfg = load_config(f"configs/{config}", overrides + ["run.deadline_s=10"])
    with pytest.raises(ProtocolError) as e:
        run_protocol_inproc(cfg, observe=cheating(sender, label, body))
    assert e.value.peer == sender and e.value.tag.startswith(f"{label}#"), e.value
    assert says in e.value.reason, e.value.reason
