"""A party's state folder decides whether it starts a service or resumes one: a new service
needs --run-id and a folder that holds none; --resume needs the party's own folder (and takes
its run id from it); each refusal names the folder and what to do. The leader's op log with a
record out of place, or holding fewer ops than the parties' checkpoints (cut short), is refused
naming the file; so is a resume whose request log is gone."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from deadlines import deadline
from mpcbandit.errors import DataError
from mpcbandit.files import write_private
from types import SimpleNamespace

from mpcbandit.serve.loop import OpLog, agree_resume
from mpcbandit.serve.wal import encode_record


def _serve(tmp_path, *args):
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve", "hannun-synthetic",
                           "--role", "feature_holder", "--index", "0", *args], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(60))
    assert done.returncode != 0
    return done.stderr


def test_a_new_service_needs_a_run_id(tmp_path):
    err = _serve(tmp_path, "--state", str(tmp_path / "s"))
    assert "a new service needs --run-id" in err


def test_a_folder_holding_a_service_is_not_started_afresh(tmp_path):
    write_private(tmp_path / "s" / "run.json", json.dumps({"party": "feature_holder.0",
                                                           "run_id": "abc"}))
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), "--run-id", "new")
    assert "holds the state of a service" in err and "--resume" in err


@pytest.mark.parametrize("resume", ["--resume", "--start-or-resume"])
def test_resume_needs_the_partys_own_folder_and_run_id(tmp_path, resume):
    """--start-or-resume (a container's one command for every start: docker-compose.yml's
    serve profile) resumes a folder that holds a service as --resume does."""
    if resume == "--resume":  # the other starts a new service there
        assert "holds no service to resume" in _serve(tmp_path, "--state", str(tmp_path / "s"),
                                                      "--resume")
    write_private(tmp_path / "s" / "run.json", json.dumps({"party": "dealer.0",
                                                           "run_id": "abc"}))
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), resume)
    assert "is the state of dealer.0, not of feature_holder.0" in err
    write_private(tmp_path / "s" / "run.json", json.dumps({"party": "feature_holder.0",
                                                           "run_id": "abc"}))
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), resume, "--run-id", "xyz")
    assert "--run-id xyz differs from the service's abc" in err


def test_an_op_log_with_a_record_out_of_place_is_refused_naming_it(tmp_path):
    path = tmp_path / "ops.wal"
    write_private(path, encode_record({"n": 1, "kind": "decide", "ids": ["a"]})
                  + encode_record({"n": 3, "kind": "update", "ids": ["a"]}))
    with pytest.raises(DataError, match="ops.wal: record 2 is not op 2"):
        OpLog(path)


def test_a_protocol_that_cannot_be_served_is_refused_before_anything_is_written(tmp_path):
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve", "demo-sum", "--out",
                           str(tmp_path / "svc")], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(60))
    assert done.returncode != 0 and "protocol demo cannot be served yet" in done.stderr
    assert "serves: hannun" in done.stderr and not (tmp_path / "svc").exists()


def test_resume_of_a_batch_runs_folder_is_refused(tmp_path):
    write_private(tmp_path / "run" / "run.json", json.dumps({"config": "x", "overrides": []}))
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve", "--resume", "--out",
                           str(tmp_path / "run")], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=deadline(60))
    assert done.returncode != 0 and "is a batch run's, not a service's" in done.stderr


def test_start_or_resume_starts_a_service_only_with_a_run_id(tmp_path):
    """A container's one command for every start (docker-compose.yml's serve profile): an
    empty state folder is a new service, which needs its id."""
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), "--start-or-resume", "--run-id", "")
    assert "a new service needs --run-id" in err


def test_start_or_resume_is_not_given_with_resume(tmp_path):
    assert "--resume or --start-or-resume" in _serve(tmp_path, "--state", str(tmp_path / "s"),
                                                     "--start-or-resume", "--resume")


def test_a_resume_whose_request_log_is_gone_is_refused_naming_it(tmp_path):
    write_private(tmp_path / "s" / "run.json", json.dumps({"party": "feature_holder.0",
                                                           "run_id": "abc"}))
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), "--resume")
    assert f"{tmp_path / 's' / 'requests.wal'} is missing" in err


class _Followers:
    """The followers' first words at a resume: the checkpoints each holds."""

    def __init__(self, saved: dict[str, list[int]]):
        self.saved, self.sent = dict(saved), []

    def receive_any(self, label, peers):
        peer = peers[0]
        return peer, {"sync": self.saved.pop(peer)}

    def send(self, label, peer, body):
        self.sent.append((peer, body))


def _leader_ctx(tmp_path, mine: list[int], theirs: dict[str, list[int]]):
    state = SimpleNamespace(saved=lambda: list(mine), oplog_path=tmp_path / "ops.wal")
    return SimpleNamespace(name="arm_puller.0", state=state, chan=_Followers(theirs))


def test_an_op_log_cut_behind_the_checkpoints_is_refused_not_resumed_from_op_0(tmp_path):
    ctx = _leader_ctx(tmp_path, [56, 61], {"dealer.0": [56, 61], "feature_holder.0": [61]})
    with pytest.raises(DataError) as e:
        agree_resume(ctx, ["dealer.0", "feature_holder.0"], logged=29)
    assert "ops.wal holds 29 ops" in str(e.value) and "arm_puller.0 at op 61" in str(e.value)
    assert ctx.chan.sent == []  # no follower was told to resume anywhere


def test_a_whole_op_log_resumes_from_the_last_common_checkpoint(tmp_path):
    ctx = _leader_ctx(tmp_path, [56, 61], {"dealer.0": [56, 61], "feature_holder.0": [56]})
    assert agree_resume(ctx, ["dealer.0", "feature_holder.0"], logged=63) == 56
    assert {peer for peer, _ in ctx.chan.sent} == {"dealer.0", "feature_holder.0"}


def test_a_folder_with_a_services_logs_but_no_run_json_is_not_started_afresh(tmp_path):
    write_private(tmp_path / "s" / "requests.wal",
                  encode_record({"kind": "context", "id": "c1", "features": [0.1]}))
    write_private(tmp_path / "s" / "run.lock", "")  # the folder is one mpcbandit made
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), "--run-id", "new")
    assert "holds a service's requests.wal but no run.json" in err
    assert (tmp_path / "s" / "requests.wal").stat().st_size > 0  # left as it was


def test_a_party_of_another_service_is_refused_in_the_hello_naming_the_run_id():
    from mpcbandit.config import load_config
    from mpcbandit.errors import ProtocolError
    from parties import check_peers
    from mpcbandit.shipped_configs import config_path
    from parties.serving import service_greeting

    cfg = load_config(config_path("hannun-synthetic"))
    mine, _ = service_greeting(cfg, None, "abc")
    same, _ = service_greeting(cfg, None, "abc")
    other, _ = service_greeting(cfg, None, "xyz")
    check_peers(mine, {"dealer.0": same})
    with pytest.raises(ProtocolError) as e:
        check_peers(mine, {"dealer.0": other})
    assert "service.run_id" in str(e.value) and "xyz" in str(e.value)
