"""A real service answers 503 naming the holder whose slice did not arrive within
serve.decision_timeout_s, and 429 with Retry-After while p''s decision queue is full; the
requests queued behind the missing slice are decided (in time, or late: the missing slice held
them back), and the refused ids leave no trace in the model (the replay agrees)."""

import threading

from deadlines import deadline
from serve_service import HOLDERS, PULLER, Apps, Service, records, replay
from serve_support import wait_for


def test_a_missing_slice_is_a_503_naming_its_holder_and_a_full_queue_a_429(tmp_path):
    out = tmp_path / "svc"
    # one batch under way at a time: the batch waiting for the missing slice holds p' back,
    # so the requests behind it fill p''s queue
    svc = Service(out, f"serve.decision_timeout_s={deadline(2):g}", "serve.queue_limit=2",
                  "serve.in_flight=1")
    apps = Apps(svc, seed=7)
    answers = {}

    def ask(rid):
        answers[rid] = apps.decide(rid)

    def post_slices(rid, holders=HOLDERS):   # one at a time: the holders' queues hold 2 too
        apps.contexts(rid, holders)
        assert {(h, rid) for h in holders} <= apps.acked["contexts"]
        wait_for(lambda: all(svc.metric(h, "mpcbandit_queue_depth") == 0 for h in HOLDERS),
                 "the holders took the slices in")

    try:
        post_slices("half", ["feature_holder.0"])   # holder 1's slice never comes
        for rid in ("q1", "q2", "q3"):
            post_slices(rid)
        first = threading.Thread(target=ask, args=("half",))
        first.start()
        wait_for(lambda: svc.metric(PULLER, "mpcbandit_batch_size_count") >= 1,
                 "p' took the batch and waits for the slices")
        queued = [threading.Thread(target=ask, args=(rid,)) for rid in ("q1", "q2")]
        for t in queued:
            t.start()
        wait_for(lambda: svc.metric(PULLER, "mpcbandit_queue_depth") == 2, "two queued")
        status, body, headers = apps.decide("q3")
        assert status == 429 and int(headers["Retry-After"]) >= 1, body
        for t in [first, *queued]:
            t.join(deadline(30))
        status, body, _ = answers["half"]
        assert status == 503 and body["missing"] == ["feature_holder.1"], body
        assert "feature_holder.1" in body["error"]
        for rid in ("q1", "q2"):   # queued behind the missing slice: decided, maybe late
            status, body, _ = answers[rid]
            assert status == 200 or "the backend did not finish" in body["error"], body
        again = apps.decide("q3")   # refused with 429, it was not taken
        assert again[0] == 200, again[1]
        wait_for(lambda: {"q1", "q2"} <= {r["id"] for r in records(out, PULLER)
                                          if r["kind"] == "decision"}, "q1, q2 decided")
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] == 3
