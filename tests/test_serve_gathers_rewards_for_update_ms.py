"""Rewards ready gather for serve.update_ms after the first of them before one update applies
them together (at once when serve.max_update wait, and at a stop): fewer, larger updates. An
update of one reward costs the holders about the rounds of many, and where one op fits a
decision that comes during it waits for all of them (the emulated LAN at 20/s: 300 updates
for 300 decisions, the parties' CPU 46-54 ms a decision; with 100 ms, 152-156 updates, 38-39
ms)."""

import time
from types import SimpleNamespace

import pytest

from deadlines import deadline
from mpcbandit.serve.leader import Leader
from serve_service import PULLER, Apps, Service, records
from serve_support import wait_for


def _leader(update_ms: float, max_update: int = 256):
    return SimpleNamespace(serve=SimpleNamespace(update_ms=update_ms, max_update=max_update),
                           ready={}, gathering=True, _ready_since=None)


def test_rewards_ready_wait_update_ms_from_the_first_seen():
    leader = _leader(100.0)
    assert Leader.rewards_wait(leader) == 0.0          # nothing ready: nothing to wait for
    leader.ready = {"a": None}
    assert 0.09 < Leader.rewards_wait(leader) <= 0.1   # the first seen starts the gathering
    leader.ready["b"] = None                            # a later one waits no longer than it
    leader._ready_since -= 0.06
    assert 0.03 < Leader.rewards_wait(leader) <= 0.04
    leader._ready_since -= 0.05
    assert Leader.rewards_wait(leader) == 0.0


@pytest.mark.parametrize("why", ["max_update waiting", "stopping", "no window"])
def test_rewards_ready_are_due_at_once_when_full_stopping_or_not_gathered(why):
    leader = _leader(0.0 if why == "no window" else 60_000.0, max_update=2)
    leader.ready = {"a": None} if why != "max_update waiting" else {"a": None, "b": None}
    leader.gathering = why != "stopping"
    assert Leader.rewards_wait(leader) == 0.0


def _updates(out) -> list[list[str]]:
    return [op["ids"] for op in records(out, PULLER, "ops.wal") if op["kind"] == "update"]


def _rewarded(out, update_ms: int, ids: list[str]) -> tuple[Service, float]:
    """A service gathering rewards for update_ms; ids decided, then rewarded one at a time
    (each acknowledged before the next); the service and how long the rewards took to post."""
    svc = Service(out, f"serve.update_ms={update_ms}")
    try:
        apps = Apps(svc)
        apps.decided(ids)
        posted = time.monotonic()
        for rid in ids:
            assert apps.reward(rid)[0] == 202
        return svc, time.monotonic() - posted
    except BaseException:
        svc.stop()
        raise


def test_a_service_applies_rewards_posted_within_update_ms_in_one_update(tmp_path):
    out, ids = tmp_path / "svc", [f"r{k}" for k in range(6)]
    svc, took = _rewarded(out, round(deadline(1500)), ids)   # all six posted within the window
    try:
        assert took < deadline(1.0), "the rewards took too long to post"
        wait_for(lambda: _updates(out), "an update", deadline(30))
    finally:
        assert svc.stop() == 0
    assert _updates(out) == [ids[:4], ids[4:]]   # 4: the largest power of two of the 6


def test_a_stop_applies_the_rewards_still_gathering(tmp_path):
    out, ids = tmp_path / "svc", [f"s{k}" for k in range(4)]
    svc, _ = _rewarded(out, 60_000, ids)
    try:
        time.sleep(1.0)   # p'' tells p' within milliseconds; the minute's window holds them
        assert _updates(out) == []
    finally:
        assert svc.stop() == 0
    assert _updates(out) == [ids]
