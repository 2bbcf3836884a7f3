"""SIGTERM drains a party: new requests get 503, the batches already open are finished by the
backend and answered, their decisions are logged, and the process exits 0."""

import signal
import threading

from deadlines import deadline
from mpcbandit.experiments.serve_service import metric
from mpcbandit.serve.wal import read_records
from serve_support import arm_for, call, start_party, wait_for


def test_sigterm_answers_open_decisions_refuses_new_ones_and_exits_0(tmp_path):
    wal, gate = tmp_path / "run" / "party.wal", tmp_path / "decide-now"
    proc, url = start_party(tmp_path, "--wal", str(wal), "--hold-until", str(gate),
                            "--set", f"decision_timeout_s={deadline(60):g}")
    try:
        answers = {}
        posters = [threading.Thread(target=lambda rid=rid: answers.__setitem__(
            rid, call(url, "POST", "/v1/decisions", {"id": rid}))) for rid in ("o1", "o2", "o3")]
        for t in posters:
            t.start()
        def accepted():   # handed to the backend (a batch taken, which it holds) or queued
            text = call(url, "GET", "/metrics")[1]
            return (metric(text, "mpcbandit_batch_size_count", 'kind="decisions"') >= 1 and
                    metric(text, "mpcbandit_batch_size_sum", 'kind="decisions"')
                    + metric(text, "mpcbandit_queue_depth", 'kind="decisions"') == 3)
        wait_for(accepted, "the backend took a batch and every decision request is accepted")
        proc.send_signal(signal.SIGTERM)

        def refused():
            status, body, _ = call(url, "POST", "/v1/contexts", {"id": "n", "features": [1, 2]})
            return status == 503 and "stopping" in body["error"] and body
        wait_for(refused, "new requests are refused with 503")
        health = call(url, "GET", "/v1/health")[1]
        assert health["ready"] is False and "stopping" in health["reason"]
        assert not answers  # the open decisions still wait for the backend
        gate.touch()
        for t in posters:
            t.join(deadline(60))
        assert {rid: a[:2] for rid, a in answers.items()} == {
            rid: (200, {"id": rid, "arm": arm_for(rid)}) for rid in ("o1", "o2", "o3")}
        assert proc.wait(deadline(60)) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(deadline(30))
    decisions = {r["id"]: r["arm"] for r in read_records(wal)[0] if r["kind"] == "decision"}
    assert decisions == {rid: arm_for(rid) for rid in ("o1", "o2", "o3")}
    assert "drained" in (tmp_path / "party.log").read_text()
