"""A public key that is not z85 (a character outside its alphabet, a wrong length, a group past
2**32, not a string) is a SecurityError naming the card or the roster that holds it: `roster`
and a party's start name the file, never a bare KeyError."""

import json
import os

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.net.security import SecurityError, load_curve, roster_from_cards, write_party_key

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2",
        "network.base_port=7500"]
NOT_Z85 = ["~" * 40, "abc", "#" * 40, 12345]


@pytest.fixture
def parties():
    return load_config(REPO / "configs/demo-sum.toml", SETS).parties()


def cards_of(tmp_path, parties):
    cards = [write_party_key(tmp_path / p.name, p) for p in parties]
    return cards, [tmp_path / p.name / f"{p.name}.card.json" for p in parties]


@pytest.mark.parametrize("bad", NOT_Z85)
def test_roster_names_the_card_whose_key_is_not_z85(tmp_path, parties, bad):
    cards, paths = cards_of(tmp_path, parties)
    paths[1].write_text(json.dumps(cards[1] | {"public_key": bad}))
    with pytest.raises(SecurityError, match=f"card {paths[1]}: public_key is not a z85 CURVE key"):
        roster_from_cards(parties, paths)


def test_roster_on_the_command_line_names_the_card(tmp_path, parties, cli):
    cards, paths = cards_of(tmp_path, parties)
    paths[0].write_text(json.dumps(cards[0] | {"public_key": "~" * 40}))
    sets = [a for s in SETS for a in ("--set", s)]
    done = cli("roster", "configs/demo-sum.toml", *paths, "--out", tmp_path / "roster.json",
               *sets, check=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"card {paths[0]}: public_key is not a z85 CURVE key" in done.stderr, done.stderr


@pytest.mark.parametrize("bad", NOT_Z85)
def test_a_party_names_the_roster_entry_whose_key_is_not_z85(tmp_path, parties, bad):
    cards, _ = cards_of(tmp_path, parties)
    folder = tmp_path / "input.0"
    roster = folder / "roster.json"
    roster.write_text(json.dumps([c if c["name"] != "compute.1" else c | {"public_key": bad}
                                  for c in cards]))
    os.chmod(roster, 0o600)
    with pytest.raises(SecurityError, match=f"{roster}: compute.1's public_key is not a z85"):
        load_curve(str(folder), "input.0", ["compute.0", "compute.1"])
