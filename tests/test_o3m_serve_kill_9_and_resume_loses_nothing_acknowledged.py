"""`kill -9` of the AP, a passive participant or the PMG of a live O3M service while
applications post columns, decisions and rewards: the others say it is gone (/v1/health) and
the AP refuses decisions naming it; `serve --resume` brings the service back with every
acknowledged request (the same ids are duplicates, 409), the mask each participant kept, every
acknowledged reward applied exactly once, and the model goes on equal to the float64 replay of
the log."""

import os
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from o3m_serve_service import AP, PARTIES, PASSIVE, PMG, O3mApps, o3m_service
from serve_service import records, replay
from serve_support import wait_for


def _traffic(apps: O3mApps, prefix: str, stop: threading.Event, workers: int = 4) -> None:
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


def _applied(out) -> list[str]:
    return [i for op in records(out, AP, "ops.wal") if op["kind"] == "update" for i in op["ids"]]


@pytest.mark.parametrize("victim", [AP, PASSIVE[1], PMG])
def test_o3m_kill_9_then_resume_keeps_every_acknowledged_request_and_the_replay(tmp_path, victim):
    out = tmp_path / "svc"
    svc = o3m_service(out, "serve.checkpoint_every=4")
    apps = O3mApps(svc, seed=3)
    stop = threading.Event()
    traffic = threading.Thread(target=_traffic, args=(apps, "a", stop), daemon=True)
    traffic.start()
    try:
        wait_for(lambda: len(apps.acked["rewards"]) >= 30, "traffic under way")
        os.kill(svc.pids()[victim], signal.SIGKILL)
        witness = PASSIVE[0] if victim == AP else AP
        wait_for(lambda: svc.health(witness)["peers"].get(victim) == "gone",
                 f"{witness} reports {victim} gone", 30)
        if victim != AP:
            status, body, _ = apps.decide("after-the-kill")
            assert status == 503 and victim in body["error"] and body["gone"] == [victim]
        stop.set()
        traffic.join(60)
        assert svc.stop() == 1   # one party did not drain: it was killed
        svc = apps.svc = o3m_service(out, resume=True)
        for rid in sorted(apps.acked["decisions"])[:5]:   # the logs remember every id
            assert apps.decide(rid)[0] == 409
        for party, rid in sorted(apps.acked["contexts"])[:5]:
            assert svc.post(party, "/v1/contexts", {"id": rid, "features": [0.1] * 6})[0] == 409
        for rid in sorted(apps.acked["rewards"])[:5]:
            assert apps.reward(rid)[0] == 409
        stop.clear()
        traffic = threading.Thread(target=_traffic, args=(apps, "b", stop), daemon=True)
        traffic.start()
        wait_for(lambda: sum(r.startswith("b") for r in apps.acked["rewards"]) >= 20,
                 "traffic after the resume")
        stop.set()
        traffic.join(60)
        wait_for(lambda: sorted(_applied(out)) == sorted(apps.acked["rewards"]),
                 "every acknowledged reward applied, once")
        assert svc.stop() == 0
    finally:
        stop.set()
        if svc.proc.poll() is None:
            svc.stop()
    served = {r["id"]: r["arm"] for r in records(out, AP) if r["kind"] == "decision"}
    assert {i: served.get(i) for i in apps.arms} == apps.arms   # every answered arm is logged
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] >= len(apps.arms)
    assert report["theta_norm_gap"] < 1e-12
    assert set(PARTIES) <= {p.name for p in out.iterdir()}
    # the mask was dealt once: at the resume every participant used the block it kept
    assert (out / "logs" / f"{PMG}.log").read_text().count("dealt a new mask") == 1
