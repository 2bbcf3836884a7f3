"""`kill -9` of each party of a live service in turn while applications post contexts,
decisions and rewards: the others say it is gone (/v1/health) and refuse decisions naming it;
`serve --resume` brings the service back with every acknowledged request (the same ids are
duplicates, 409), applies every acknowledged reward exactly once, and the model goes on equal to
the float64 replay of the log."""

import pytest

from serve_service import (HOLDERS, PARTIES, PULLER, REWARD, Apps, Service, kill_9_and_resume,
                           records, replay)

pytestmark = pytest.mark.slow  # kills and resumes: the quick tier (-m "not slow") leaves it out

VICTIMS = ["feature_holder.1", PULLER, REWARD, "dealer.0"]


def test_kill_9_of_each_party_then_resume_keeps_every_acknowledged_request_and_the_replay(
        tmp_path):
    out = tmp_path / "svc"
    apps = Apps(Service(out, "serve.checkpoint_every=4"), seed=3)
    kill_9_and_resume(apps, VICTIMS, lambda victim: HOLDERS[0] if victim == PULLER else PULLER,
                      PULLER, 3)
    served = {r["id"]: r["arm"] for r in records(out, PULLER) if r["kind"] == "decision"}
    assert {i: served.get(i) for i in apps.arms} == apps.arms   # every answered arm is logged
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] >= len(apps.arms)
    assert set(PARTIES) <= {p.name for p in out.iterdir()}
