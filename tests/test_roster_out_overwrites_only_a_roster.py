"""`roster --out PATH` writes over an earlier roster (read by its content), and over nothing
else: a secret key, a card or any other file given by mistake is left whole and named."""

import json

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.net.security import write_party_key

SETS = ["demo.inputs=2", "demo.computing=2", "demo.length=8", "demo.iterations=2",
        "network.base_port=7700"]
SET_ARGS = [a for s in SETS for a in ("--set", s)]


@pytest.fixture
def cards(tmp_path):
    parties = load_config(REPO / "configs/demo-sum.toml", SETS).parties()
    for p in parties:
        write_party_key(tmp_path / p.name, p)
    return [tmp_path / p.name / f"{p.name}.card.json" for p in parties]


def test_roster_out_never_overwrites_a_secret_key_or_another_file(tmp_path, cards, cli):
    secret = tmp_path / "input.0" / "input.0.key_secret"
    notes = tmp_path / "notes.txt"
    notes.write_text("not json\n")
    for target in (secret, cards[1], notes):
        before = target.read_bytes()
        done = cli("roster", "configs/demo-sum.toml", *cards, "--out", target, *SET_ARGS,
                   check=False)
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert f"{target} exists and is not a roster" in done.stderr, done.stderr
        assert target.read_bytes() == before


def test_roster_out_replaces_an_earlier_roster(tmp_path, cards, cli):
    roster = tmp_path / "roster.json"
    cli("roster", "configs/demo-sum.toml", *cards, "--out", roster, *SET_ARGS)
    first = json.loads(roster.read_text())
    write_party_key(tmp_path / "input.0", load_config(REPO / "configs/demo-sum.toml",
                                                      SETS).party("input", 0))  # a new key
    cli("roster", "configs/demo-sum.toml", *cards, "--out", roster, *SET_ARGS)
    second = json.loads(roster.read_text())
    assert [e["name"] for e in second] == [e["name"] for e in first]
    assert second[0]["public_key"] != first[0]["public_key"]
