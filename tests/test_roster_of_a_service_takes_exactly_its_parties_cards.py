"""`mpcbandit keys` and `mpcbandit roster` take the parties of what is deployed: a batch run's
(every party of the config, as before) or, with --service, the config's service's (Hannun's
without environment.0): a service's roster needs exactly its parties' cards, and a card missing
or extra is named, with the roster that would take it."""

import json

from click.testing import CliRunner

from mpcbandit.cli import main

CONFIG = "hannun-synthetic"
SERVICE = ["feature_holder.0", "feature_holder.1", "arm_puller.0", "reward_holder.0", "dealer.0"]


def cli(*args):
    return CliRunner().invoke(main, [*map(str, args), "--set", "network.base_port=7000"])


def cards(tmp_path, parties, *extra):
    """Each party's card, made by its own organisation (`keys --party`)."""
    for party in parties:
        done = cli("keys", CONFIG, "--party", party, "--out", tmp_path / party, *extra)
        assert done.exit_code == 0, done.output
    return [tmp_path / p / f"{p}.card.json" for p in parties]


def test_a_services_roster_is_made_from_its_parties_cards_alone(tmp_path):
    done = cli("roster", CONFIG, "--service", *cards(tmp_path, SERVICE, "--service"),
               "--out", tmp_path / "roster.json")
    assert done.exit_code == 0, done.output
    assert [e["name"] for e in json.loads((tmp_path / "roster.json").read_text())] == SERVICE


def test_a_batch_roster_still_names_the_environments_card_missing_and_points_to_service(tmp_path):
    done = cli("roster", CONFIG, *cards(tmp_path, SERVICE), "--out", tmp_path / "roster.json")
    assert done.exit_code == 1
    assert "no card for environment.0" in done.output
    assert ("a service's roster (`mpcbandit serve`) has only the service's parties "
            f"({', '.join(SERVICE)}): give --service") in done.output
    assert not (tmp_path / "roster.json").exists()


def test_a_card_outside_the_service_is_named_as_extra(tmp_path):
    every = cards(tmp_path, [*SERVICE, "environment.0"])
    done = cli("roster", CONFIG, "--service", *every, "--out", tmp_path / "roster.json")
    assert done.exit_code == 1
    env_card = tmp_path / "environment.0" / "environment.0.card.json"
    assert (f"card {env_card} names party 'environment.0', which this config's service does "
            f"not have (parties: {', '.join(SERVICE)}); a batch run's roster") in done.output
    # the batch run's roster takes the same cards
    assert cli("roster", CONFIG, *every, "--out", tmp_path / "roster.json").exit_code == 0


def test_keys_for_a_service_makes_only_its_parties_keys(tmp_path):
    refused = cli("keys", CONFIG, "--service", "--party", "environment.0", "--out", tmp_path / "e")
    assert refused.exit_code == 1 and not (tmp_path / "e").exists()
    assert f"no party environment.0 in this config's service (parties: {', '.join(SERVICE)})" \
        in refused.output
    done = cli("keys", CONFIG, "--service", "--out", tmp_path / "local")
    assert done.exit_code == 0, done.output
    roster = json.loads((tmp_path / "local" / "roster.json").read_text())
    assert [e["name"] for e in roster] == SERVICE


def test_a_protocol_that_is_not_served_is_named(tmp_path):
    done = cli("keys", "demo-sum", "--service", "--out", tmp_path / "k")
    assert done.exit_code == 1
    assert "protocol demo cannot be served yet (`mpcbandit serve` serves: hannun, o3m)" in done.output
