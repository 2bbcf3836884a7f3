"""Decision batches run at the holders beside an update under way (and beside each other):
each reads the model version p' names, logged with its op, and the float64 replay that
follows those versions recomputes every arm served, 100 %."""

import threading

from serve_service import PULLER, Apps, Service, records, replay, traffic
from serve_support import wait_for


def _beside_an_update(out) -> bool:
    """Whether a decision batch in p''s op log read the model before an update logged
    ahead of it (it ran while that update was under way)."""
    updates = 0
    for op in records(out, PULLER, "ops.wal"):
        if op["kind"] == "update":
            updates += 1
        elif op["kind"] == "decide" and op["ids"] and op["model"] < updates:
            return True
    return False


def test_decision_batches_beside_an_update_read_the_version_named_and_replay_exactly(tmp_path):
    out = tmp_path / "svc"
    svc = Service(out, "serve.checkpoint_every=50", net="lan")
    apps = Apps(svc)
    stop = threading.Event()
    load = threading.Thread(target=traffic, args=(apps, "u", stop, 12), daemon=True)
    load.start()
    try:
        wait_for(lambda: _beside_an_update(out) and len(apps.acked["decisions"]) >= 150,
                 "a decision batch logged beside an update under way", 120)
    finally:
        stop.set()
        load.join(30)
        assert svc.stop() == 0
    report = replay(out)
    assert report["decisions"] == len(apps.acked["decisions"]) >= 150
    assert report["disagree"] == [] and report["agreement"] == 1.0
