"""A party's state folder decides whether it starts a service or resumes one: a new service
needs --run-id and a folder that holds none; --resume needs the party's own folder (and takes
its run id from it); each refusal names the folder and what to do. The leader's op log with a
record out of place is refused naming the file."""

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO
from mpcbandit.errors import DataError
from mpcbandit.files import write_private
from mpcbandit.serve.loop import OpLog
from mpcbandit.serve.wal import encode_record


def _serve(tmp_path, *args):
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve", "hannun-synthetic",
                           "--role", "feature_holder", "--index", "0", *args], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=60)
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
                          text=True, timeout=60)
    assert done.returncode != 0 and "protocol demo cannot be served yet" in done.stderr
    assert "serves: hannun" in done.stderr and not (tmp_path / "svc").exists()


def test_resume_of_a_batch_runs_folder_is_refused(tmp_path):
    write_private(tmp_path / "run" / "run.json", json.dumps({"config": "x", "overrides": []}))
    done = subprocess.run([sys.executable, "-m", "mpcbandit", "serve", "--resume", "--out",
                           str(tmp_path / "run")], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "is a batch run's, not a service's" in done.stderr


def test_start_or_resume_starts_a_service_only_with_a_run_id(tmp_path):
    """A container's one command for every start (docker-compose.yml's serve profile): an
    empty state folder is a new service, which needs its id."""
    err = _serve(tmp_path, "--state", str(tmp_path / "s"), "--start-or-resume", "--run-id", "")
    assert "a new service needs --run-id" in err


def test_start_or_resume_is_not_given_with_resume(tmp_path):
    assert "--resume or --start-or-resume" in _serve(tmp_path, "--state", str(tmp_path / "s"),
                                                     "--start-or-resume", "--resume")
