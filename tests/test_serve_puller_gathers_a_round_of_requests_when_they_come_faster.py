"""Hannun's p' lets a decision batch gather requests for one of the holders' rounds (the lead
holder reports its length) when ops are under way and requests come faster than one a round:
a batch starts at a round's end wherever in a round p' sends it, and one op for two requests
computes once a round instead of twice. Otherwise serve.batch_ms, as before; a round length
that is not seconds is refused naming the holder."""

from types import SimpleNamespace

import pytest

from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.hannun.serve_flights import Pace
from mpcbandit.protocols.hannun.serve_puller import Puller


def _window_s(busy: bool, every_s: float, round_s: float = 0.028) -> float:
    pace = Pace(SimpleNamespace(batch_ms=5.0, in_flight=16))
    pace.round_s, pace.arrivals = round_s, [k * every_s for k in range(32)]
    return pace.window_s(busy)


def test_a_batch_gathers_a_round_when_requests_come_faster_than_one_a_round():
    assert _window_s(True, 0.025) == pytest.approx(0.028)


def test_a_batch_keeps_its_own_window_when_requests_are_sparse_or_nothing_is_under_way():
    assert _window_s(True, 0.1) == pytest.approx(0.005)
    assert _window_s(False, 0.025) == pytest.approx(0.005)
    assert _window_s(True, 0.025, round_s=0.001) == pytest.approx(0.005)


@pytest.mark.parametrize("round_s", ["28 ms", -1.0, True, None, float("nan")])
def test_a_round_length_that_is_not_seconds_is_refused_naming_the_holder(round_s):
    puller = SimpleNamespace(arms={}, ready={}, closing={},
                             pace=Pace(SimpleNamespace(in_flight=16)))
    with pytest.raises(ProtocolError, match="feature_holder.0.*round_s"):
        Puller.hear(puller, "feature_holder.0", {"fit": 2, "round_s": round_s})
