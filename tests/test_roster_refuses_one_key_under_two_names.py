"""One public key under two names (a card copied and renamed, by mistake or not) would make
the key's real owner be taken for the other party and refused everywhere: `roster` refuses it
naming both cards, and a party refuses a roster.json that holds it, naming both parties."""

import json
import os

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.net.security import SecurityError, load_curve, roster_from_cards, write_party_key

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2",
        "network.base_port=7600"]


def test_roster_refuses_one_key_under_two_names(tmp_path, cli):
    parties = load_config(REPO / "configs/demo-sum.toml", SETS).parties()
    cards = {p.name: write_party_key(tmp_path / p.name, p) for p in parties}
    paths = [tmp_path / p.name / f"{p.name}.card.json" for p in parties]
    # compute.1's card carries compute.0's key (its name, role, index and address are right)
    copied = tmp_path / "compute.1" / "compute.1.card.json"
    copied.write_text(json.dumps(cards["compute.1"] | {"public_key": cards["compute.0"]["public_key"]}))
    first = tmp_path / "compute.0" / "compute.0.card.json"
    with pytest.raises(SecurityError, match=f"cards {first} \\(compute.0\\) and {copied} "
                                            "\\(compute.1\\) carry the same public key"):
        roster_from_cards(parties, paths)
    done = cli("roster", "configs/demo-sum.toml", *paths, "--out", tmp_path / "roster.json",
               *[a for s in SETS for a in ("--set", s)], check=False)
    assert done.returncode != 0 and "carry the same public key" in done.stderr, done.stderr
    assert not (tmp_path / "roster.json").exists()


def test_a_party_refuses_a_roster_with_one_key_under_two_names(tmp_path):
    parties = load_config(REPO / "configs/demo-sum.toml", SETS).parties()
    cards = {p.name: write_party_key(tmp_path / p.name, p) for p in parties}
    cards["input.1"] = cards["input.1"] | {"public_key": cards["compute.0"]["public_key"]}
    roster = tmp_path / "input.0" / "roster.json"
    roster.write_text(json.dumps(list(cards.values())))
    os.chmod(roster, 0o600)
    with pytest.raises(SecurityError, match=f"roster {roster}: input.1 and compute.0 have the "
                                            "same public key"):
        load_curve(str(tmp_path / "input.0"), "input.0", ["compute.0", "compute.1"])
