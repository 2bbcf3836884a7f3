"""1,100 plain TCP connections (no key needed) to a party started under the common limit of
1,024 open files neither crash it nor keep its real peers out: it raises its own limit and
drops connections that never finish a handshake."""

import os
import resource
import socket
import subprocess
import sys
import time

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.launch import pick_base_port
from mpcbandit.net.security import write_keys

STRAYS = 1100


def limit_files_to_1024():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


def test_a_flood_of_plain_connections_leaves_the_run_intact(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < STRAYS + 200:
        pytest.skip(f"hard open-file limit {hard} is too low to open {STRAYS} connections")
    if hard == resource.RLIM_INFINITY or soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 1 << 16), hard))
    base = pick_base_port("127.0.0.1", 6)
    sets = ["demo.iterations=3", f"network.base_port={base}", f'run.keys_dir="{tmp_path}"']
    cfg = load_config(REPO / "configs/demo-sum.toml", sets)
    write_keys(tmp_path, cfg.parties())
    env = dict(os.environ, PYTHONPATH=str(REPO))

    def start(p, **kw):
        cmd = [sys.executable, "-m", "mpcbandit", "party", "configs/demo-sum.toml", "--role", p.role,
               "--index", str(p.index), *[a for s in sets for a in ("--set", s)]]
        return popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True, **kw)

    target = cfg.party("compute", 0)
    port = int(target.address.rpartition(":")[2])
    procs = {target.name: start(target, preexec_fn=limit_files_to_1024)}
    strays = []
    try:
        end = time.monotonic() + deadline(30)
        while True:  # until the party listens
            try:
                strays.append(socket.create_connection(("127.0.0.1", port), timeout=1))
                break
            except OSError:
                assert time.monotonic() < end, "the party never listened"
                time.sleep(0.05)
        for _ in range(STRAYS - 1):
            strays.append(socket.create_connection(("127.0.0.1", port), timeout=deadline(5)))
        for p in cfg.parties():
            if p.name != target.name:
                procs[p.name] = start(p)
        outs = {n: p.communicate(timeout=deadline(120))[0] for n, p in procs.items()}
    finally:
        for s in strays:
            s.close()
        for p in procs.values():
            if p.poll() is None:
                p.kill()
    assert all(p.returncode == 0 for p in procs.values()), {n: o[-600:] for n, o in outs.items()}
