"""A resumed service replays p''s op log and checks each decision against the arm p' logged:
a log that says otherwise (here edited) stops the resume, p' naming the id, the op and both
arms in /v1/health, never serving from a model that differs from its log. A party told to stop
alone (SIGTERM) stops the service's rounds with a checkpoint every party shares: the others
name it in /v1/health, and the service resumes from there."""

import os
import signal

import pytest

from serve_service import ARMS, PULLER, Service, records, serving
from serve_support import wait_for

from mpcbandit.files import write_private
from mpcbandit.serve.wal import encode_record

pytestmark = pytest.mark.slow  # resumes: the quick tier (-m "not slow") leaves it out


def test_a_replay_that_differs_from_the_log_is_refused_naming_the_id(tmp_path):
    out = tmp_path / "svc"
    with serving(out) as apps:
        svc = apps.svc
        apps.decided(f"d{k}" for k in range(6))
        os.kill(svc.pids()["feature_holder.0"], signal.SIGKILL)   # no checkpoint at a stop
        assert svc.stop() == 1
        logged = records(out, PULLER)
        first = next(r for r in logged if r["kind"] == "decision")
        edited = first["arm"], (first["arm"] + 1) % ARMS
        first["arm"] = edited[1]
        write_private(out / PULLER / "requests.wal", b"".join(map(encode_record, logged)))
        svc = apps.svc = Service(out, resume=True, ready=False)
        reason = wait_for(lambda: svc.health(PULLER).get("reason", "").startswith("DataError")
                          and svc.health(PULLER)["reason"], "p' refuses the replay")
        assert f"id {first['id']!r} got arm {edited[0]}" in reason
        assert f"says {edited[1]}" in reason and "op 1 replayed" in reason
        assert not svc.health(PULLER)["ready"]


def test_one_party_told_to_stop_stops_the_service_at_a_shared_checkpoint(tmp_path):
    out = tmp_path / "svc"
    with serving(out) as apps:
        svc = apps.svc
        apps.decided(f"s{k}" for k in range(5))
        os.kill(svc.pids()["feature_holder.1"], signal.SIGTERM)
        wait_for(lambda: svc.health(PULLER)["peers"]["feature_holder.1"] == "gone",
                 "p' names the holder that stopped")
        status, body, _ = apps.decide("after")
        assert status == 503 and body["gone"] == ["feature_holder.1"]
        assert "feature_holder.1 stopped: start every party again with --resume" in body["reason"]
        assert svc.stop() == 0
        saved = {p.name: sorted(x.name for x in (p / "checkpoints" / p.name).glob("[0-9]*"))
                 for p in out.iterdir() if (p / "checkpoints").is_dir() and p.name != "dealer.0"}
        assert set(map(tuple, saved.values())) == {("5.ckpt",)}, saved
        svc = apps.svc = Service(out, resume=True)
        apps.decided(["again"])
        assert svc.stop() == 0
