"""Hannun's engine needs the WHOLE context's norm <= 1, which no holder sees (issue 59, item 9):
slices each within 1 that make a context of 1.34 are scaled by default (a folder by the
holder's largest row, a service by the fixed 1/sqrt(n)), so the secure run and the service
equal the float64 reference arm for arm; a built-in task's public context above 1 is refused
naming its step and norm; the service's 400 says the bound is on the whole context; and
hannun.norms = "promise", which checks each slice only, warns at start."""

import dataclasses
import logging
import math

import numpy as np
import pytest

from datafolders import edit
from mpcbandit.config import load_config
from mpcbandit.data import BanditData, hannun_data
from mpcbandit.data.split import write_split
from mpcbandit.errors import DataError
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.hannun import serve as hannun_serve
from mpcbandit.protocols.inproc_runner import inproc_summary
from mpcbandit.protocols.hannun.serve_replay import serve_log
from serve_service import DIMS, SETTINGS, Service, applied_rewards, replay
from serve_support import LiveService, wait_for

HANNUN = "configs/hannun-synthetic.toml"
SLICE = 0.95   # each holder's slice: within 1; the whole context of 2 holders: 1.34


def _each_slice_at(norm):
    """Every row of a features table rescaled to the given norm (the header row kept)."""
    def change(rows):
        for r in rows[1:]:
            x = np.array([float(v) for v in r[1:]])
            r[1:] = [repr(float(v)) for v in x * (norm / np.linalg.norm(x))]
    return change


def test_a_folder_whose_slices_are_within_1_but_whose_contexts_are_1_34_runs_exactly(tmp_path):
    cfg = load_config(HANNUN, ['run.security="none"', "hannun.iterations=150",
                               'hannun.exploration="seeded"'])
    data = write_split(cfg, tmp_path / "data", ".csv")
    for h in ("feature_holder.0", "feature_holder.1"):
        edit(data / h / "features.csv", _each_slice_at(SLICE))
    secure = inproc_summary(cfg, data)
    plain = get_protocol(cfg.protocol).reference(cfg, data)   # `--plaintext --data`, float64
    arms = secure["series"]["arms"]
    assert len(arms) == 150 and arms == plain["series"]["arms"]
    whole = hannun_data.folder_task(cfg, data, ["feature_holder.0", "feature_holder.1"],
                                    "environment.0").contexts
    assert np.linalg.norm(whole, axis=1).max() <= 1 + 1e-12   # scaled by the default rule


def test_a_built_in_context_above_1_is_refused_naming_its_step_and_norm(monkeypatch):
    cfg = load_config(HANNUN, ["hannun.iterations=20"])
    real = hannun_data.make_task

    def task_with_a_long_context(*a, **kw):   # a built-in task's public context of norm 1.34
        data = real(*a, **kw)
        x = data.contexts.copy()
        x[7] *= math.sqrt(2) * SLICE / np.linalg.norm(x[7])
        return BanditData(x, data.rewards, data.expected)

    monkeypatch.setattr(hannun_data, "make_task", task_with_a_long_context)
    for rule in ("auto", "promise"):   # public data: checked whole whatever the rule
        cfg = load_config(HANNUN, ["hannun.iterations=20", f'hannun.norms="{rule}"'])
        with pytest.raises(DataError, match=r"hannun.data = 'synthetic': the whole context of "
                                            r"step 7 has norm 1\.343\d* > 1"):
            hannun_data.task(cfg)


def test_the_services_400_says_the_bound_is_on_the_whole_context(tmp_path):
    cfg = load_config(HANNUN, [])
    role = hannun_serve.service_role(cfg, "feature_holder", 0)
    # the test's backend pulls every kind of request: the holder's role, taking them all
    live = LiveService(tmp_path / "p.wal", role=dataclasses.replace(role, decides=True,
                                                                     rewards=True))
    try:
        x = [0.0] * role.features
        x[0] = 1.2
        status, body, _ = live.call("POST", "/v1/contexts", {"id": "a", "features": x})
    finally:
        live.close()
    assert status == 400 and body["field"] == "features"
    assert "norm 1.2 is above 1" in body["error"] and "WHOLE context" in body["error"]
    assert "multiplies each slice by 1/sqrt(2)" in body["error"]


def test_promise_warns_at_start_that_the_whole_context_is_not_checked(tmp_path, caplog):
    cfg = load_config(HANNUN, ['run.security="none"', "hannun.iterations=12",
                               'hannun.norms="promise"'])
    data = write_split(cfg, tmp_path / "data", ".csv")
    with caplog.at_level(logging.WARNING, logger="mpcbandit.data"):
        hannun_data.features(cfg, 0, data / "feature_holder.0", "feature_holder.0")
        hannun_serve.source(cfg, "feature_holder", 1, None)
    said = [r.getMessage() for r in caplog.records if "is not checked" in r.getMessage()]
    assert len(said) == 2 and all("WHOLE context" in s for s in said)
    assert said[0].startswith("feature_holder.0") and said[1].startswith("feature_holder.1")
    caplog.clear()
    auto = load_config(HANNUN, ['run.security="none"', "hannun.iterations=12"])
    with caplog.at_level(logging.WARNING, logger="mpcbandit.data"):
        hannun_data.features(auto, 0, data / "feature_holder.0", "feature_holder.0")
    assert not caplog.records


def test_a_service_whose_slices_are_within_1_but_whose_contexts_are_1_34_equals_the_replay(
        tmp_path):
    rng = np.random.default_rng(3)
    out = tmp_path / "svc"
    # slices near one direction, each of norm 0.95 (whole: 1.34), and their rewards applied in
    # one batch: unscaled, an arm's W would grow past what the refresh's schedule assumes
    lean = [rng.normal(size=DIMS // 2) for _ in range(2)]
    svc = Service(out)
    try:
        def decide(rid):
            for h, centre in zip(("feature_holder.0", "feature_holder.1"), lean):
                part = centre + 0.3 * rng.normal(size=DIMS // 2)
                part = part / np.linalg.norm(part) * SLICE
                assert svc.post(h, "/v1/contexts", {"id": rid, "features": part.tolist()})[0] \
                    == 202
            status, body, _ = svc.post("arm_puller.0", "/v1/decisions", {"id": rid})
            assert status == 200, body
            return body["arm"]

        first = [f"u{t}" for t in range(40)]
        arms = [decide(rid) for rid in first]
        for rid, arm in zip(first, arms):
            assert svc.post("reward_holder.0", "/v1/rewards",
                            {"id": rid, "reward": float(arm % 2 == 0)})[0] == 202
        wait_for(lambda: len(applied_rewards(out)) == len(first), "the rewards applied")
        for t in range(20):
            decide(f"v{t}")
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.stop()
    # the replay scales the logged slices (what the applications posted) as the holders did
    logged = serve_log(load_config(HANNUN, SETTINGS), out)
    contexts = np.concatenate([x for kind, _, x in logged if kind == "decide"])
    assert len(contexts) == 60
    assert np.allclose(np.linalg.norm(contexts, axis=1), SLICE * math.sqrt(2) / math.sqrt(2))
    report = replay(out)
    assert report["decisions"] == 60
    assert report["disagree"] == [] and report["agreement"] == 1.0
