"""A real service answers 503 naming the holder whose slice did not arrive within
serve.decision_timeout_s (the other ids of the batch are decided), and 429 with Retry-After
while p''s decision queue is full; the refused ids leave no trace in the model (the replay
agrees)."""

import threading

from serve_service import PULLER, Apps, Service, replay
from serve_support import wait_for


def test_a_missing_slice_is_a_503_naming_its_holder_and_a_full_queue_a_429(tmp_path):
    out = tmp_path / "svc"
    svc = Service(out, "serve.decision_timeout_s=2", "serve.queue_limit=2")
    apps = Apps(svc, seed=7)
    answers = {}

    def ask(rid):
        answers[rid] = apps.decide(rid)

    try:
        apps.contexts("half", holders=["feature_holder.0"])   # holder 1's slice never comes
        first = threading.Thread(target=ask, args=("half",))
        first.start()
        wait_for(lambda: svc.metric(PULLER, "mpcbandit_batch_size_count") >= 1,
                 "p' took the batch and waits for the slices")
        for rid in ("q1", "q2"):
            apps.contexts(rid)
        queued = [threading.Thread(target=ask, args=(rid,)) for rid in ("q1", "q2")]
        for t in queued:
            t.start()
        wait_for(lambda: svc.metric(PULLER, "mpcbandit_queue_depth") == 2, "two queued")
        apps.contexts("q3")
        status, body, headers = apps.decide("q3")
        assert status == 429 and int(headers["Retry-After"]) >= 1, body
        for t in [first, *queued]:
            t.join(30)
        status, body, _ = answers["half"]
        assert status == 503 and body["missing"] == ["feature_holder.1"], body
        assert "feature_holder.1" in body["error"]
        assert [answers[r][0] for r in ("q1", "q2")] == [200, 200]
        assert apps.decide("q3")[0] == 200   # refused with 429, it was not taken
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] == 3
