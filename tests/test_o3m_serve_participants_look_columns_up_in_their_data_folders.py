"""With --data, every participant of an O3M service (the AP and each passive one) looks up the
columns of a request its application did not post in its own folder (docs/data.md's O3M layout:
K x d_p values by id, arm by arm): decisions need only the id; an id in no folder is a 503
naming every participant; and serve-replay reads the same folders."""

import subprocess
import sys

from deadlines import deadline
from o3m_serve_service import AP, PARTIES, PASSIVE, PMG, SETTINGS
from serve_service import Service, env, replay
from serve_support import REPO


def test_o3m_decisions_on_ids_the_participants_look_up_in_their_folders(tmp_path):
    data = tmp_path / "data"
    split = subprocess.run([sys.executable, "-m", "mpcbandit", "data", "split", "o3m-synthetic",
                            "--out", str(data), "--steps", "30",
                            *[a for s in SETTINGS if s.startswith("o3m.") for a in ("--set", s)]],
                           cwd=REPO, env=env(), capture_output=True, text=True,
                           timeout=deadline(120))
    assert split.returncode == 0, split.stderr
    out = tmp_path / "svc"
    svc = Service(out, f"serve.decision_timeout_s={deadline(1.5):g}", data=data,
                  config="o3m-synthetic", settings=SETTINGS, parties=PARTIES)
    try:
        for t in range(1, 21):
            status, body, _ = svc.post(AP, "/v1/decisions", {"id": f"u{t}"})
            assert status == 200, body
            assert svc.post(AP, "/v1/rewards", {"id": f"u{t}", "reward": body["arm"] / 2})[0] == 202
        status, body, _ = svc.post(AP, "/v1/decisions", {"id": "stranger"})
        assert status == 503 and body["missing"] == [AP, *PASSIVE], body
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    report = replay(out)
    assert report["decisions"] == 20 and report["disagree"] == [] and report["rewards"] == 20
    assert not (out / PMG / "requests.wal").read_text().strip()   # the PMG hears of no request
