"""Each organisation makes its own key and sends only its public card; the roster is built
from the cards; a party refuses a secret that is not its roster entry, a roster that lacks a
peer, and a keys folder or roster that others may write."""

import json
import os
import shutil
import stat
import subprocess
import sys

import pytest
import zmq

from children import popen
from conftest import REPO
from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError
from mpcbandit.launch import pick_base_port
from mpcbandit.net.security import SecurityError, load_curve, roster_from_cards, write_party_key
from mpcbandit.protocols.demo import plaintext

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2", "seed=5"]
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def cli(*args, check=True):
    done = subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=deadline(120))
    if check:
        assert done.returncode == 0, done.stderr
    return done


def sets_args(sets):
    return [a for s in sets for a in ("--set", s)]


def test_organisations_make_their_own_keys_and_run(tmp_path):
    sets = [*SETS, f"network.base_port={pick_base_port('127.0.0.1', 5)}"]
    cfg = load_config(REPO / "configs/demo-sum.toml", sets)
    folders = {p.name: tmp_path / f"org-{p.name}" / "keys" for p in cfg.parties()}
    for name, folder in folders.items():
        cli("keys", "configs/demo-sum.toml", "--party", name, "--out", folder, *sets_args(sets))
        assert sorted(f.name for f in folder.iterdir()) == [f"{name}.card.json", f"{name}.key_secret"]
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert stat.S_IMODE((folder / f"{name}.key_secret").stat().st_mode) == 0o600
        assert "secret" not in json.loads((folder / f"{name}.card.json").read_text())
    cards = [folders[n] / f"{n}.card.json" for n in folders]
    cli("roster", "configs/demo-sum.toml", *cards, "--out", tmp_path / "roster.json", *sets_args(sets))
    procs = {}
    for p in cfg.parties():
        shutil.copy(tmp_path / "roster.json", folders[p.name] / "roster.json")
        cmd = [sys.executable, "-m", "mpcbandit", "party", "configs/demo-sum.toml", "--role", p.role,
               "--index", str(p.index), "--result", tmp_path / "results" / f"{p.name}.json",
               *sets_args([*sets, f'run.keys_dir="{folders[p.name]}"'])]
        procs[p.name] = popen(list(map(str, cmd)), cwd=REPO, env=ENV,
                              stderr=subprocess.PIPE, text=True)
    errors = {n: p.communicate(timeout=deadline(120))[1] for n, p in procs.items()}
    assert all(p.returncode == 0 for p in procs.values()), errors
    out = json.loads((tmp_path / "results" / "output.0.json").read_text())["output"]
    assert out["digest"] == plaintext(cfg)["digest"]


def make_cards(tmp_path, cfg):
    return {p.name: write_party_key(tmp_path / p.name, p) for p in cfg.parties()}


def test_roster_refuses_unknown_duplicate_missing_and_mismatched_cards(tmp_path):
    cfg = load_config(REPO / "configs/demo-sum.toml", [*SETS, "network.base_port=7300"])
    make_cards(tmp_path, cfg)
    cards = [tmp_path / p.name / f"{p.name}.card.json" for p in cfg.parties()]
    assert [e["name"] for e in roster_from_cards(cfg.parties(), cards)] == [p.name for p in cfg.parties()]
    with pytest.raises(SecurityError, match=r"no card for output\.0"):
        roster_from_cards(cfg.parties(), cards[:-1])
    with pytest.raises(SecurityError, match=r"input\.0 has a card already"):
        roster_from_cards(cfg.parties(), [*cards, cards[0]])
    stranger = json.loads(cards[0].read_text()) | {"name": "mallory.0"}
    (tmp_path / "m.json").write_text(json.dumps(stranger))
    with pytest.raises(SecurityError, match=r"m\.json names party 'mallory\.0'"):
        roster_from_cards(cfg.parties(), [tmp_path / "m.json", *cards])
    moved = json.loads(cards[1].read_text()) | {"address": "tcp://10.9.9.9:1"}
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    with pytest.raises(SecurityError, match=r"moved\.json: address .* differs"):
        roster_from_cards(cfg.parties(), [cards[0], tmp_path / "moved.json", *cards[2:]])
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SecurityError, match=r"bad\.json is not readable JSON"):
        roster_from_cards(cfg.parties(), [tmp_path / "bad.json"])


def test_a_party_refuses_foreign_secret_missing_peer_and_loose_folders(tmp_path):
    cfg = load_config(REPO / "configs/demo-sum.toml", [*SETS, "network.base_port=7400"])
    cards = make_cards(tmp_path, cfg)
    folder = tmp_path / "input.0"
    roster = folder / "roster.json"
    peers = ["compute.0", "compute.1"]
    roster.write_text(json.dumps(list(cards.values())))
    os.chmod(roster, 0o600)
    assert load_curve(str(folder), "input.0", peers).me == "input.0"
    os.chmod(folder, 0o777)
    with pytest.raises(SecurityError, match="writable by group or others"):
        load_curve(str(folder), "input.0", peers)
    os.chmod(folder, 0o700)
    os.chmod(roster, 0o666)
    with pytest.raises(SecurityError, match=r"roster\.json is writable by group or others"):
        load_curve(str(folder), "input.0", peers)
    os.chmod(roster, 0o600)
    roster.write_text(json.dumps([c for n, c in cards.items() if n != "compute.1"]))
    with pytest.raises(ConfigError, match=r"no key for compute\.1"):
        load_curve(str(folder), "input.0", peers)
    stranger = zmq.curve_keypair()[0].decode()  # a key of no party: not input.0's own
    other = dict(cards) | {"input.0": cards["input.0"] | {"public_key": stranger}}
    roster.write_text(json.dumps(list(other.values())))
    with pytest.raises(SecurityError, match="does not match the roster's public key for input.0"):
        load_curve(str(folder), "input.0", peers)
