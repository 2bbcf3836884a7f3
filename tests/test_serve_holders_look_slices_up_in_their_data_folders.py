"""With --data, a feature holder of a service looks up the slice of a request its application
did not post in its own folder (`mpcbandit data split`'s layout: features by id, aligned to
ids.csv): decisions need only the id; an id in no folder is a 503 naming every holder; and
serve-replay reads the same folders."""

import subprocess
import sys

from deadlines import deadline
from serve_service import SETTINGS, Service, env, replay
from serve_support import REPO


def test_decisions_on_ids_the_holders_look_up_in_their_folders(tmp_path):
    data = tmp_path / "data"
    split = subprocess.run([sys.executable, "-m", "mpcbandit", "data", "split",
                            "hannun-synthetic", "--out", str(data), "--steps", "30",
                            *[a for s in SETTINGS if s.startswith("hannun.")
                              for a in ("--set", s)]],
                           cwd=REPO, env=env(), capture_output=True, text=True,
                           timeout=deadline(120))
    assert split.returncode == 0, split.stderr
    out = tmp_path / "svc"
    svc = Service(out, f"serve.decision_timeout_s={deadline(1.5):g}", data=data)
    try:
        for t in range(1, 21):
            status, body, _ = svc.post("arm_puller.0", "/v1/decisions", {"id": f"u{t}"})
            assert status == 200, body
            reward = float(body["arm"] % 2)
            assert svc.post("reward_holder.0", "/v1/rewards",
                            {"id": f"u{t}", "reward": reward})[0] == 202
        status, body, _ = svc.post("arm_puller.0", "/v1/decisions", {"id": "stranger"})
        assert status == 503 and body["missing"] == ["feature_holder.0", "feature_holder.1"]
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    report = replay(out)
    assert report["decisions"] == 20 and report["disagree"] == []
