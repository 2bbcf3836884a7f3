"""Parties on separate hosts (network namespaces joined by veth links, own addresses),
CURVE on, launched one `mpcbandit party` per host: the demo and a real protocol complete."""

import json
import os
import subprocess
import sys

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.net.security import write_keys
from netns import Hosts, NamespaceUnavailable

PORT = 7100


def run_across_hosts(tmp_path, config, sets):
    cfg = load_config(REPO / config, sets)
    parties = cfg.parties()
    try:
        hosts = Hosts(len(parties)).__enter__()
    except NamespaceUnavailable as e:
        pytest.skip(f"network namespaces refused here: {e}")
    try:
        addresses = {p.name: f"tcp://{hosts.addresses[k]}:{PORT}" for k, p in enumerate(parties)}
        table = "{" + ", ".join(f'"{n}" = "{a}"' for n, a in addresses.items()) + "}"
        sets = [*sets, f"network.addresses={table}", 'run.security="curve"',
                f'run.keys_dir="{tmp_path / "keys"}"']
        cfg = load_config(REPO / config, sets)
        write_keys(tmp_path / "keys", cfg.parties())
        env = dict(os.environ, PYTHONPATH=str(REPO))
        procs = []
        for k, p in enumerate(cfg.parties()):
            cmd = [*hosts.exec_prefix(k), sys.executable, "-m", "mpcbandit", "party", config,
                   "--role", p.role, "--index", str(p.index), "--result", str(tmp_path / f"{p.name}.json")]
            for s in sets:
                cmd += ["--set", s]
            procs.append(popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True))
        outs = [p.communicate(timeout=deadline(120))[0] for p in procs]
        assert all(p.returncode == 0 for p in procs), outs
        return {p.name: json.loads((tmp_path / f"{p.name}.json").read_text()) for p in cfg.parties()}
    finally:
        hosts.__exit__(None, None, None)
        for ns in hosts.names:
            assert subprocess.run(["ip", "netns", "pids", ns], capture_output=True).returncode != 0


def test_demo_across_hosts_with_curve(tmp_path):
    results = run_across_hosts(tmp_path, "configs/demo-sum.toml",
                               ["demo.iterations=5", "demo.length=100", "seed=4"])
    from mpcbandit.protocols.demo import plaintext
    want = plaintext(load_config(REPO / "configs/demo-sum.toml",
                                 ["demo.iterations=5", "demo.length=100", "seed=4"]))
    assert results["output.0"]["output"]["digest"] == want["digest"]
    hosts = {r["address"].split(":")[1] for r in results.values()}
    assert len(hosts) == len(results)  # every party on its own address


def test_jdp_across_hosts_with_curve(tmp_path):
    results = run_across_hosts(tmp_path, "configs/jdp-synthetic.toml", ["jdp.horizon=30"])
    assert {r["role"] for r in results.values()} == {"learner", "privatizer", "env"}
    assert all(r["rounds"] > 0 for r in results.values())
