"""`kill -9` of the AP, a passive participant and the PMG of a live O3M service in turn while
applications post columns, decisions and rewards: the others say it is gone (/v1/health) and
the AP refuses decisions naming it; `serve --resume` brings the service back with every
acknowledged request (the same ids are duplicates, 409), the mask each participant kept, every
acknowledged reward applied exactly once, and the model goes on equal to the float64 replay of
the log."""

import pytest

from o3m_serve_service import AP, ARMS, PARTIES, PASSIVE, PMG, WIDTH, O3mApps, o3m_service
from serve_service import kill_9_and_resume, records, replay

pytestmark = pytest.mark.slow  # kills and resumes: the quick tier (-m "not slow") leaves it out


def test_o3m_kill_9_of_each_party_then_resume_keeps_every_acknowledged_request_and_the_replay(
        tmp_path):
    out = tmp_path / "svc"
    apps = O3mApps(o3m_service(out, "serve.checkpoint_every=4"), seed=3)
    kill_9_and_resume(apps, [AP, PASSIVE[1], PMG],
                      lambda victim: PASSIVE[0] if victim == AP else AP, AP, ARMS * WIDTH,
                      workers=4)
    served = {r["id"]: r["arm"] for r in records(out, AP) if r["kind"] == "decision"}
    assert {i: served.get(i) for i in apps.arms} == apps.arms   # every answered arm is logged
    report = replay(out)
    assert report["disagree"] == [] and report["decisions"] >= len(apps.arms)
    assert report["theta_norm_gap"] < 1e-12
    assert set(PARTIES) <= {p.name for p in out.iterdir()}
    # the mask was dealt once: at every resume each participant used the block it kept
    assert (out / "logs" / f"{PMG}.log").read_text().count("dealt a new mask") == 1
