"""Parties may start in any order and late: 50 random start orders complete (each party in
its own thread with its own ZeroMQ context, CURVE on), and a run with one party process
starting 20 s after the others completes."""

import json
import os
import random
import subprocess
import sys
import threading
import time

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.launch import pick_base_port
from mpcbandit.net.security import write_keys
from mpcbandit.protocols.demo import plaintext
from parties import run_party
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=32", "demo.iterations=3", "seed=8"]


def test_fifty_random_start_orders_complete(tmp_path):
    rng = random.Random(1234)
    for trial in range(50):
        base = pick_base_port("127.0.0.1", 5)
        sets = [*SETS, f"network.base_port={base}", f'run.keys_dir="{tmp_path / str(trial)}"']
        cfg = load_config(REPO / "configs/demo-sum.toml", sets)
        write_keys(tmp_path / str(trial), cfg.parties())
        parties = cfg.parties()
        order = rng.sample(parties, len(parties))
        delays = sorted(rng.uniform(0, 0.3) for _ in parties)
        results, errors = {}, []

        def start(p, delay):
            time.sleep(delay)
            try:
                results[p.name] = run_party(cfg, p.role, p.index, session=f"t{trial}")
            except BaseException as e:  # noqa: BLE001
                errors.append((p.name, e))

        threads = [threading.Thread(target=start, args=(p, d)) for p, d in zip(order, delays)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(deadline(60))
        assert not errors, (trial, [p.name for p in order], errors)
        assert results["output.0"]["output"]["digest"] == plaintext(cfg)["digest"], trial


def test_a_party_starting_20_s_late_still_completes(tmp_path):
    base = pick_base_port("127.0.0.1", 5)
    sets = [*SETS, f"network.base_port={base}", f'run.keys_dir="{tmp_path / "keys"}"']
    cfg = load_config(REPO / "configs/demo-sum.toml", sets)
    write_keys(tmp_path / "keys", cfg.parties())
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def launch(p):
        cmd = [sys.executable, "-m", "mpcbandit", "party", "configs/demo-sum.toml", "--role", p.role,
               "--index", str(p.index), "--result", str(tmp_path / f"{p.name}.json")]
        for s in sets:
            cmd += ["--set", s]
        return popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)

    *early, late = cfg.parties()
    procs = [launch(p) for p in early]
    time.sleep(20)
    # input holders never talk to the output party and may already be done; nobody failed
    assert all(p.poll() in (None, 0) for p in procs), "a party gave up before the late one came"
    assert any(p.poll() is None for p in procs), "the computing parties should still be waiting"
    procs.append(launch(late))
    outs = [p.communicate(timeout=deadline(60))[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    out = json.loads((tmp_path / "output.0.json").read_text())
    assert out["output"]["digest"] == plaintext(cfg)["digest"]
