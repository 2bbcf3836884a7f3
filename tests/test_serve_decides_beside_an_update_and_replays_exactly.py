"""Decision batches run at the holders beside an update under way (and beside each other):
each reads the model version p' names, logged with its op, and the float64 replay that
follows those versions recomputes every arm served, 100 %. Where one op fits at a time, an
update takes its turn as a batch does."""

import threading

from deadlines import deadline
from serve_service import PULLER, Apps, Service, records, replay, traffic
from serve_support import wait_for


def _op_log(out) -> tuple[int, int, bool]:
    """(updates, decision batches, whether a batch read a model older than the updates
    logged ahead of it: it ran while that update was under way) in p''s op log."""
    updates = batches = 0
    beside = False
    for op in records(out, PULLER, "ops.wal"):
        if op["kind"] == "update":
            updates += 1
        elif op["kind"] == "decide" and op["ids"]:
            batches += 1
            beside = beside or op["model"] < updates
    return updates, batches, beside


def _under_traffic(out, net: str, setting: str, workers: int, until, what: str) -> Apps:
    """A service under steady traffic from `workers` applications until `until(apps)`, then
    stopped cleanly; its applications."""
    svc = Service(out, setting, net=net)
    apps = Apps(svc)
    stop = threading.Event()
    load = threading.Thread(target=traffic, args=(apps, "u", stop, workers), daemon=True)
    load.start()
    try:
        wait_for(lambda: until(apps), what, deadline(120))
    finally:
        stop.set()
        load.join(deadline(30))
        assert svc.stop() == 0
    return apps


def test_decision_batches_beside_an_update_read_the_version_named_and_replay_exactly(tmp_path):
    out = tmp_path / "svc"
    # 10 ms one way: rounds wait on the network, so several ops fit in one even on a loaded
    # machine (on the emulated LAN one may: p' then runs one op at a time, update or batch)
    apps = _under_traffic(out, "one_way_ms=10,mbit_s=1000", "serve.checkpoint_every=50", 12,
                          lambda apps: _op_log(out)[2] and len(apps.acked["decisions"]) >= 150,
                          "a decision batch logged beside an update under way")
    report = replay(out)
    assert report["decisions"] == len(apps.acked["decisions"]) >= 150
    assert report["disagree"] == [] and report["agreement"] == 1.0


def test_one_op_under_way_takes_turns_between_a_batch_and_an_update(tmp_path):
    """serve.in_flight = 1: an update counts as an op under way as a batch does (its rounds
    cost the holders alike), so no batch runs beside one (it did: fails before), and amid
    steady traffic updates are applied between batches."""
    out = tmp_path / "svc"
    _under_traffic(out, "lan", "serve.in_flight=1", 8,
                   lambda apps: _op_log(out)[0] >= 20 and len(apps.acked["decisions"]) >= 100,
                   "100 decisions and 20 updates")
    updates, batches, beside = _op_log(out)
    assert not beside
    assert updates >= 20 and batches >= 20
    report = replay(out)
    assert report["disagree"] == [] and report["agreement"] == 1.0
