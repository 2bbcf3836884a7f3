"""What the parties must agree on about their data (the id list's digest and length) is in the
hello: a party holding another list is named by its peers, with the item that differs; a
party whose own data is refused says so after the hello, so its peers are told at once
(PeerAborted naming it and its DataError), not after a deadline."""

import os
import subprocess
import sys

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.errors import ProtocolError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.handshake import check_same_run, make_greeting

SETS = ["o3m.iterations=20", "o3m.participants=2", "o3m.partition=[5,5]"]


def test_data_keys_are_compared_between_parties_that_both_declare_data():
    ids = {"data.ids": "sha256:aa", "data.rows": 20}
    holder, _ = make_greeting("d", {"seed": 1, **ids})
    dealer, _ = make_greeting("d", {"seed": 1})  # reads no data: declares none
    other, _ = make_greeting("d", {"seed": 1, "data.ids": "sha256:bb", "data.rows": 21})
    built_in, _ = make_greeting("d", {"seed": 1, "data.ids": "built-in task"})
    check_same_run("dealer.0", holder, dealer)
    check_same_run("feature_holder.0", dealer, holder)
    with pytest.raises(ProtocolError, match=r"holds other data than ours: its id list has 21 ids, "
                                            r"ours 20 .*: data.ids: mine "
                                            r"'sha256:aa', theirs 'sha256:bb'; data.rows: mine 20, "
                                            r"theirs 21") as e:
        check_same_run("env.0", holder, other)
    assert e.value.peer == "env.0" and e.value.tag == "hello"
    with pytest.raises(ProtocolError, match=r"data.ids: mine 'sha256:aa', theirs 'built-in task'"):
        check_same_run("pp.1", holder, built_in)  # its folder, my peer's built-in task: refused


def split(tmp_path):
    cfg = load_config(REPO / "configs/o3m-synthetic.toml", ['run.security="none"', *SETS])
    write_split(cfg, tmp_path / "data")
    return tmp_path / "data"


def test_a_party_holding_another_id_list_is_named_in_the_hello(cli, tmp_path):
    data = split(tmp_path)
    for name in ("ids.csv", "rewards.csv"):  # env.0's own data is consistent, its list is not
        path = data / "env.0" / name
        path.write_text(path.read_text().replace("\nu7,", "\nv7,").replace("\nu7\n", "\nv7\n"))
    out = cli("run", "configs/o3m-synthetic.toml", "--data", data, "--out", tmp_path / "run",
              *[a for s in ['run.security="none"', *SETS] for a in ("--set", s)], check=False)
    assert out.returncode != 0
    assert "(tag 'hello'): holds other data than ours" in out.stderr, out.stderr[-1500:]
    assert "data.ids: mine 'sha256:" in out.stderr and ("peer 'env.0'" in out.stderr
                                                        or "peer 'ap.0'" in out.stderr)
    # the launcher's headline is the refusal itself, not a party that "sent nothing"
    headline = next(ln for ln in out.stderr.splitlines() if ln.startswith("Error:"))
    assert "(tag 'hello')" in headline and "sent nothing" not in headline, headline


def test_a_party_whose_data_is_refused_tells_its_peers_at_once(tmp_path):
    data = split(tmp_path)
    table = data / "pp.1" / "features.csv"
    rows = table.read_text().splitlines()
    cells = rows[4].split(",")
    cells[3] = "nan"
    rows[4] = ",".join(cells)
    table.write_text("\n".join(rows) + "\n")
    base = pick_base_port("127.0.0.1", 4)
    cfg = load_config(REPO / "configs/o3m-synthetic.toml", SETS)
    procs = {}
    for p in cfg.parties():
        cmd = [sys.executable, "-m", "mpcbandit", "party", "configs/o3m-synthetic.toml",
               "--role", p.role, "--index", str(p.index), "--data", str(data / p.name),
               "--set", 'run.security="none"', "--set", f"network.base_port={base}",
               "--set", f"run.startup_s={deadline(60):g}",
               "--set", f"run.deadline_s={deadline(60):g}"]
        for s in SETS:
            cmd += ["--set", s]
        procs[p.name] = popen(cmd, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errs = {}
    for name, proc in procs.items():
        try:
            _, errs[name] = proc.communicate(timeout=deadline(120))
        except subprocess.TimeoutExpired:
            proc.kill()
            _, errs[name] = proc.communicate()
        assert proc.returncode != 0, name
    assert f"DataError: {table}: row 4, column 'a0_x2': nan" in errs["pp.1"]
    # its peers heard it from pp.1 (or from the AP, who passed it on): no one waited for a
    # deadline, which would have said "no message from peer"
    for name in ("ap.0", "pmg.0", "env.0"):
        assert "PeerAborted: party 'pp.1' failed: DataError" in errs[name], errs[name][-800:]
        assert "no message from peer" not in errs[name]
