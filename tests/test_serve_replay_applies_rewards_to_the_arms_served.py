"""`mpcbandit serve-replay` replays a service's log as the service ran it: each reward goes to
the arm that was served, so one decision the service made differently (a near tie the fixed
point broke the other way) is one differing decision, not a replay that drifts from there on;
a differing arm is a near tie only within the fixed point's reach, else it is reported and the
command exits 1."""

import json
import subprocess
import sys

import numpy as np
import pytest

from conftest import REPO
from deadlines import deadline
from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.config import load_config
from mpcbandit.errors import MpcBanditError
from mpcbandit.files import make_private_dir, write_private
from mpcbandit.protocols.hannun import serve_replay as hannun_serve_replay
from mpcbandit.protocols.hannun.serve_reference import ServeReference
from mpcbandit.serve.wal import encode_record

SETS = ["hannun.arms=4", "hannun.dims=6", "hannun.epsilon=0.0", 'hannun.exploration="seeded"']


def _service_folder(tmp_path, flip: str | None):
    """A service's logs, written as a service that served the float64 model's arms would
    have (the arm of `flip` served one higher), rewards applied to the arms served."""
    cfg = load_config(REPO / "configs/hannun-synthetic.toml", SETS)
    ref = ServeReference(4, 6, 0.0, 20, exploration_key(cfg.seed))
    rng = np.random.default_rng(11)
    theta = rng.normal(size=(4, 6))
    logs = {p: [] for p in ("feature_holder.0", "feature_holder.1", "arm_puller.0",
                            "reward_holder.0")}
    ops, served, context, waiting = [], {}, {}, []
    for batch in range(30):
        x = rng.normal(size=(4, 6))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        ids = [f"b{batch}-{k}" for k in range(4)]
        for rid, arm, row in zip(ids, ref.decide(x), x):
            served[rid] = (int(arm) + 1) % 4 if rid == flip else int(arm)
            context[rid] = row
            logs["feature_holder.0"].append({"kind": "context", "id": rid,
                                             "features": row[:3].tolist()})
            logs["feature_holder.1"].append({"kind": "context", "id": rid,
                                             "features": row[3:].tolist()})
            logs["arm_puller.0"].append({"kind": "decision", "id": rid, "arm": served[rid]})
        ops.append({"n": len(ops) + 1, "kind": "decide", "ids": ids})
        if waiting:   # the previous batch's rewards come now
            r = np.array([float(theta[served[i]] @ context[i] > 0) for i in waiting])
            ref.update(np.array([context[i] for i in waiting]),
                       np.array([served[i] for i in waiting]), r)
            logs["reward_holder.0"] += [{"kind": "reward", "id": i, "reward": v}
                                        for i, v in zip(waiting, r)]
            ops.append({"n": len(ops) + 1, "kind": "update", "ids": waiting})
        waiting = ids
    out = tmp_path / "svc"
    for party, records in logs.items():
        write_private(make_private_dir(out / party) / "requests.wal",
                      b"".join(map(encode_record, records)))
    write_private(out / "arm_puller.0" / "ops.wal", b"".join(map(encode_record, ops)))
    write_private(out / "run.json", json.dumps({"serve": True, "overrides": SETS,
                                                "config": str(REPO / "configs/hannun-synthetic.toml")}))
    return cfg, out


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


def test_secret_exploration_is_replayed_only_once_the_dealer_revealed_its_keys(tmp_path):
    _, out = _service_folder(tmp_path, flip=None)
    secret = load_config(REPO / "configs/hannun-synthetic.toml", SETS[:-1])
    with pytest.raises(MpcBanditError, match=r"key of decisions 0\.\.120 is not revealed .*"
                                             r"dealer\.0/result\.json.*stops"):
        hannun_serve_replay.replay_service(secret, out)
    write_private(make_private_dir(out / "dealer.0") / "result.json", json.dumps(
        {"keys": [{"from": 0, "to": 60, "key": "00" * 32}]}))
    with pytest.raises(MpcBanditError, match=r"decisions 60\.\.120 is not revealed"):
        hannun_serve_replay.replay_service(secret, out)
