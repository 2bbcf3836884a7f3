"""`mpcbandit serve-replay` replays a service's log as the service ran it: each reward goes to
the arm that was served, so one decision the service made differently (a near tie the fixed
point broke the other way) is one differing decision, not a replay that drifts from there on;
a differing arm is a near tie only within the fixed point's reach, else it is reported and the
command exits 1."""

import json
import subprocess
import sys

from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.files import write_private
from mpcbandit.protocols.hannun import serve_replay as hannun_serve_replay
from serve_support import LOGGED_SETS, service_logs

SETS = LOGGED_SETS


def _service_folder(tmp_path, flip: str | None):
    """A service's folder as `serve --out` leaves it: every party's logs (service_logs) and
    the launcher's record."""
    out = tmp_path / "svc"
    service_logs(out, flip)
    write_private(out / "run.json", json.dumps({"serve": True, "overrides": SETS,
                                                "config": str(REPO / "configs/hannun-synthetic.toml")}))
    return load_config(REPO / "configs/hannun-synthetic.toml", SETS), out


def test_a_log_served_as_replayed_agrees_everywhere(tmp_path):
    cfg, out = _service_folder(tmp_path, flip=None)
    report = hannun_serve_replay.replay_service(cfg, out)
    assert report["agree"] == report["decisions"] == 120
    assert report["near_ties"] == report["disagree"] == []


def test_one_decision_served_differently_differs_alone_and_is_named(tmp_path):
    cfg, out = _service_folder(tmp_path, flip="b2-1")
    report = hannun_serve_replay.replay_service(cfg, out)
    assert [d["id"] for d in report["disagree"]] == ["b2-1"]   # not every decision after it
    assert report["agree"] == 119 and report["disagree"][0]["gap"] > 0
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve-replay", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=deadline(120))
    assert done.returncode == 1 and "DIFFERS, id 'b2-1'" in done.stdout, done.stdout


def test_a_differing_arm_within_the_fixed_points_reach_is_a_near_tie(tmp_path, monkeypatch):
    cfg, out = _service_folder(tmp_path, flip="b2-1")
    monkeypatch.setattr(hannun_serve_replay, "NEAR_TIE_UNITS", 1e9)
    report = hannun_serve_replay.replay_service(cfg, out)
    assert report["disagree"] == [] and [d["id"] for d in report["near_ties"]] == ["b2-1"]


def test_secret_exploration_without_its_keys_is_checked_against_the_greedy_arm(tmp_path):
    """No key revealed (hannun.reveal = "never"): at epsilon = 0 every decision is greedy, so
    one served off the greedy arm is more than exploration explains (bound 0)."""
    secret = load_config(REPO / "configs/hannun-synthetic.toml", SETS[:-1])
    _, out = _service_folder(tmp_path / "right", flip=None)
    report = hannun_serve_replay.replay_service(secret, out)
    assert report["greedy_only"] == report["agree"] == report["decisions"] == 120
    assert report["exact"] == 0 and report["off_greedy"] == report["disagree"] == []
    _, out = _service_folder(tmp_path / "flipped", flip="b2-1")
    report = hannun_serve_replay.replay_service(secret, out)
    assert [d["id"] for d in report["off_greedy"]] == ["b2-1"] and report["off_greedy_bound"] == 0
