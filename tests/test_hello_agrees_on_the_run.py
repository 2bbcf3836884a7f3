"""The hello decides what a run is: parties whose configs differ only in local paths run
together; a differing key is named with the peer; every link's session is fresh, so a message
recorded in an earlier run of the same config is rejected."""

import os
import shutil
import subprocess
import sys

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.errors import ProtocolError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.channel import Channel
from mpcbandit.net.codec import Envelope, encode
from mpcbandit.net.handshake import (check_same_run, link_sessions, make_greeting,
                                     read_greeting)
from mpcbandit.net.inproc import InprocHub
from mpcbandit.net.security import write_keys

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2", "seed=5"]


def start_parties(tmp_path, per_party_sets):
    """One `mpcbandit party` process per party, each with its own keys folder; their outputs."""
    base = pick_base_port("127.0.0.1", 5)
    sets = [*SETS, f"network.base_port={base}"]
    cfg = load_config(REPO / "configs/demo-sum.toml", sets)
    write_keys(tmp_path / "all-keys", cfg.parties())
    procs = {}
    for p in cfg.parties():
        own = tmp_path / f"host-{p.name}" / "some" / "keys"  # every host keeps keys elsewhere
        shutil.copytree(tmp_path / "all-keys", own)
        cmd = [sys.executable, "-m", "mpcbandit", "party", "configs/demo-sum.toml", "--role",
               p.role, "--index", str(p.index), "--set", f'run.keys_dir="{own}"',
               "--set", f"run.startup_s={deadline(20):g}",
               "--set", f"run.deadline_s={deadline(10):g}"]
        for s in sets + per_party_sets.get(p.name, []):
            cmd += ["--set", s]
        procs[p.name] = popen(cmd, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    for name, proc in procs.items():
        try:
            stdout, stderr = proc.communicate(timeout=deadline(90))
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate()
        out[name] = (proc.returncode, stdout, stderr)
    return out


def test_parties_with_different_key_folders_run_together(tmp_path):
    out = start_parties(tmp_path, {})
    assert all(rc == 0 for rc, _, _ in out.values()), {n: e[-400:] for n, (_, _, e) in out.items()}


def test_a_party_with_a_different_setting_is_named_by_its_peers(tmp_path):
    out = start_parties(tmp_path, {"input.1": ["demo.length=9"]})
    assert out["input.1"][0] != 0
    others = [n for n in out if n != "input.1"]
    named = [n for n in others if "peer 'input.1'" in out[n][2]
             and "demo.length: mine 8, theirs 9" in out[n][2]]
    assert named, {n: out[n][2][-500:] for n in others}
    assert all(out[n][0] != 0 for n in named)


def test_greeting_names_differing_keys_and_rejects_garbage():
    mine, _ = make_greeting("d1", {"seed": 1, "demo.length": 8})
    theirs, wire = make_greeting("d2", {"seed": 2, "demo.length": 8, "demo.extra": 1})
    assert read_greeting("b.0", wire) == theirs
    with pytest.raises(ProtocolError, match=r"demo.extra: mine '\(absent\)', theirs 1; seed: "
                                            r"mine 1, theirs 2") as e:
        check_same_run("b.0", mine, theirs)
    assert e.value.peer == "b.0" and e.value.tag == "hello"
    for junk in (b"hello", b"\x81\xa1v\x01", b""):
        with pytest.raises(ProtocolError, match="greeting"):
            read_greeting("b.0", junk)


def test_a_message_recorded_in_an_earlier_run_is_rejected():
    digest, fields = "same-config", {"seed": 1}

    def run_once():
        ga, _ = make_greeting(digest, fields)
        gb, _ = make_greeting(digest, fields)
        hub = InprocHub(["a", "b"])
        a = Channel("a", ["b"], hub.link("a"), session="base", deadline_s=deadline(1),
                    max_bytes=2**20,
                    link_sessions=link_sessions("base", "a", ga, {"b": gb}))
        b = Channel("b", ["a"], hub.link("b"), session="base", deadline_s=deadline(1),
                    max_bytes=2**20,
                    link_sessions=link_sessions("base", "b", gb, {"a": ga}))
        return hub, a, b

    hub1, a1, b1 = run_once()
    a1.send("x", "b", 41)
    recorded = hub1.queues["b"].get_nowait()
    hub1.queues["b"].put(recorded)
    assert b1.recv("x", "a") == 41  # the same run: delivered
    hub2, _, b2 = run_once()
    hub2.queues["b"].put(recorded)  # the same config, the same base session, a new run
    with pytest.raises(ProtocolError, match="earlier run") as e:
        b2.recv("x", "a")
    assert e.value.peer == "a"
    # a forged envelope carrying the base session does not pass either
    hub2.link("a").send("b", encode(Envelope("base", 0, "a", "x#0", 1)))
    with pytest.raises(ProtocolError, match="session"):
        b2.recv("x", "a")
