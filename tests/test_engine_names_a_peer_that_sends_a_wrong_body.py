"""A computing peer whose body is of the wrong type, dtype, size or shape, or whose share seed
is not 32 bytes, makes the engine raise a ProtocolError naming that peer and the round, never
a numpy TypeError or ValueError."""

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.local import computing_names
from mpcbandit.net.inproc import run_inproc

PARTIES = computing_names(2)
VICTIM, CHEAT = PARTIES


def run_against(victim_op, label: str, cheat_body):
    """The victim runs victim_op(eng); the cheat sends cheat_body in its place (merged
    rounds carry one list entry per op) and reads whatever the victim sends."""
    def victim(chan):
        return victim_op(Engine(chan, PARTIES, dealer=None))

    def cheat(chan):
        got = chan.exchange(label, send={VICTIM: [cheat_body]}, recv=[VICTIM] if label == "open" else [])
        return got

    return run_inproc({VICTIM: victim, CHEAT: cheat}, deadline_s=deadline(10.0))


@pytest.mark.parametrize("body, says", [
    ("forty-two", "expected 4 ring elements (uint64), got a str"),
    (np.zeros(4, dtype=np.float64), "got a float64 array of 4 elements"),
    (np.zeros(5, dtype=np.uint64), "got a uint64 array of 5 elements"),
])
def test_a_wrong_opening_is_named(body, says):
    def victim(eng):
        return eng.open(eng.public(np.ones(4)))
    with pytest.raises(ProtocolError) as e:
        run_against(victim, "open", body)
    assert e.value.peer == CHEAT and e.value.tag == "open round 1" and says in e.value.reason


@pytest.mark.parametrize("body, says", [
    ({"seed": b"short", "shape": [3]}, "share seed of 5 bytes, expected 32"),
    ({"seed": bytes(32), "shape": [3, -1]}, "bad share shape"),
    ({"seed": bytes(32), "shape": [1 << 20, 1 << 20]}, "bad share shape"),
    ({"v": np.zeros(2, dtype=np.uint64), "shape": [3]}, "expected 3 ring elements"),
    ({"v": "zeros", "shape": [3]}, "expected 3 ring elements (uint64), got a str"),
    ({"shape": [3]}, "expected 3 ring elements (uint64), got a NoneType"),
    ([1, 2, 3], "expected a dict with 'shape', got a list"),
])
def test_a_wrong_input_share_is_named(body, says):
    def victim(eng):
        return eng.input(None, CHEAT)
    with pytest.raises(ProtocolError) as e:
        run_against(victim, "input", body)
    assert e.value.peer == CHEAT and e.value.tag == "input round 1" and says in e.value.reason
