"""Decision batches run at the holders beside an update under way (and beside each other):
each reads the model version p' names, logged with its op, and the float64 replay that
follows those versions recomputes every arm served, 100 %. Where one op fits at a time, a
batch still runs beside an update, and an update waits for the batch under way."""

import threading

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
        wait_for(lambda: until(apps), what, 120)
    finally:
        stop.set()
        load.join(30)
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


def test_where_one_op_fits_a_decision_batch_runs_beside_an_update_and_updates_keep_coming(
        tmp_path):
    """serve.in_flight = 1 on the emulated LAN: one decision batch under way at most, and it
    does not wait for an update under way (it did: a decision that came during an update's
    rounds waited for all of them), while an update waits for the batch under way, so amid
    steady traffic updates are still applied between batches."""
    out = tmp_path / "svc"
    _under_traffic(out, "lan", "serve.in_flight=1", 8,
                   lambda apps: (_op_log(out)[0] >= 20 and _op_log(out)[2]
                                 and len(apps.acked["decisions"]) >= 100),
                   "100 decisions, 20 updates and a batch beside an update")
    updates, batches, beside = _op_log(out)
    assert beside
    assert updates >= 20 and batches >= 20
    report = replay(out)
    assert report["disagree"] == [] and report["agreement"] == 1.0
