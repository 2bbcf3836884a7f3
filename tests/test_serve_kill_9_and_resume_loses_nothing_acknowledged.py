"""`kill -9` of any party of a live service while applications post contexts, decisions and
rewards: the others say it is gone (/v1/health) and refuse decisions naming it; `serve --resume`
brings the service back with every acknowledged request (the same ids are duplicates, 409),
applies every acknowledged reward exactly once, and the model goes on equal to the float64
replay of the log."""

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from serve_service import (HOLDERS, PARTIES, PULLER, REWARD, Apps, Service, applied_rewards,
                           records, replay)
from serve_support import wait_for


def _traffic(apps: Apps, prefix: str, stop: threading.Event, workers: int = 6) -> None:
    def worker(w):
        k = 0
        while not stop.is_set():
            rid = f"{prefix}{w}-{k}"
            k += 1
            try:
                apps.contexts(rid)
                if apps.decide(rid)[0] == 200:
                    apps.reward(rid)
            except OSError:   # the party it talks to was killed
                time.sleep(0.05)
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(worker, range(workers)))


@pytest.mark.parametrize("victim", ["feature_holder.1", PULLER, REWARD, "dealer.0"])
def test_kill_9_then_resume_keeps_every_acknowledged_request_and_the_replay(tmp_path, victim):
    out = tmp_path / "svc"
    svc = Service(out, "serve.checkpoint_every=4")
    apps = Apps(svc, seed=3)
    stop = threading.Event()
    traffic = threading.Thread(target=_traffic, args=(apps, "a", stop), daemon=True)
    traffic.start()
    try:
        wait_for(lambda: len(apps.acked["rewards"]) >= 40, "traffic under way")
        os.kill(svc.pids()[victim], signal.SIGKILL)
        witness = HOLDERS[0] if victim == PULLER else PULLER
        wait_for(lambda: svc.health(witness)["peers"].get(victim) == "gone",
                 f"{witness} reports {victim} gone", 30)
        if victim != PULLER:
            status, body, _ = apps.decide("after-the-kill")
            assert status == 503 and victim in body["error"] and body["gone"] == [victim]
        stop.set()
        traffic.join(60)
        assert svc.stop() == 1   # one party did not drain: it was killed
        svc = apps.svc = Service(out, resume=True)
        for rid in sorted(apps.acked["decisions"])[:5]:   # the logs remember every id
            assert apps.decide(rid)[0] == 409
        for h, rid in sorted(apps.acked["contexts"])[:5]:
            assert svc.post(h, "/v1/contexts", {"id": rid, "features": [0.1, 0.1, 0.1]})[0] == 409
        for rid in sorted(apps.acked["rewards"])[:5]:
            assert apps.reward(rid)[0] == 409
        stop.clear()
        traffic = threading.Thread(target=_traffic, args=(apps, "b", stop), daemon=True)
        traffic.start()
        wait_for(lambda: sum(r.startswith("b") for r in apps.acked["rewards"]) >= 20,
                 "traffic after the resume")
        stop.set()
        traffic.join(60)
        wait_for(lambda: sorted(applied_rewards(out)) == sorted(apps.acked["rewards"]),
                 "every acknowledged reward applied, once")
        assert svc.stop() == 0
    finally:
        stop.set()
        if svc.proc.poll() is None:
            svc.stop()
    served = {r["id"]: r["arm"] for r in records(out, PULLER) if r["kind"] == "decision"}
    assert {i: served.get(i) for i in apps.arms} == apps.arms   # every answered arm is logged
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] >= len(apps.arms)
    assert set(PARTIES) <= {p.name for p in out.iterdir()}
