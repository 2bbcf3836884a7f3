"""`mpcbandit serve-replay DIR --config CONFIG [--set ...] [--data DATA]` replays every party's
state folder gathered as DIR/<party>/ from its host, as each party left it: no hand-written
run.json. CONFIG may be a shipped config's name, there and in a launcher's run.json; the
parties' records must be of one service; every refusal is worded for a replay."""

import json

from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.files import write_private
from serve_support import LOGGED_SETS, service_logs

SETS = [a for s in LOGGED_SETS for a in ("--set", s)]


def replay(*args):
    return CliRunner().invoke(main, ["serve-replay", *map(str, args)])


def test_gathered_state_folders_replay_with_a_shipped_configs_name(tmp_path):
    service_logs(tmp_path / "gathered", run_id="r1")
    done = replay(tmp_path / "gathered", "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 0, done.output
    assert "120 of 120 arms agree (100.00 %)" in done.output
    assert not (tmp_path / "gathered" / "run.json").exists()  # nothing written by hand or by it


def test_without_config_a_gathered_folder_is_told_how_to_replay_it(tmp_path):
    service_logs(tmp_path / "gathered", run_id="r1")
    done = replay(tmp_path / "gathered")
    assert done.exit_code == 1
    assert "holds no launcher's record" in done.output and "--config CONFIG" in done.output
    assert "resume" not in done.output, done.output


def test_a_launchers_record_may_name_a_shipped_config(tmp_path):
    service_logs(tmp_path / "out", run_id="r1")
    write_private(tmp_path / "out" / "run.json", json.dumps(
        {"serve": True, "config": "hannun-synthetic", "overrides": LOGGED_SETS, "run_id": "r1"}))
    done = replay(tmp_path / "out")
    assert done.exit_code == 0, done.output
    assert "120 of 120 arms agree" in done.output
    # its own config and options: none given beside it
    both = replay(tmp_path / "out", "--config", "hannun-synthetic")
    assert both.exit_code == 2 and "give no --config/--set/--data" in both.output


def test_folders_of_two_services_are_named(tmp_path):
    service_logs(tmp_path / "gathered", run_id="r1")
    write_private(tmp_path / "gathered" / "reward_holder.0" / "run.json",
                  json.dumps({"party": "reward_holder.0", "run_id": "r2"}))
    done = replay(tmp_path / "gathered", "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert (f"{tmp_path / 'gathered' / 'reward_holder.0'} belongs to service 'r2', "
            "feature_holder.0 to 'r1': gather the state folders of one service") in done.output
    write_private(tmp_path / "gathered" / "reward_holder.0" / "run.json",
                  json.dumps({"party": "feature_holder.1", "run_id": "r1"}))
    done = replay(tmp_path / "gathered", "--config", "hannun-synthetic", *SETS)
    assert "reward_holder.0 is the state folder of feature_holder.1" in done.output


def test_refusals_are_worded_for_a_replay(tmp_path):
    batch = tmp_path / "batch"
    batch.mkdir()
    write_private(batch / "run.json", json.dumps({"config": "hannun-synthetic", "overrides": []}))
    done = replay(batch)
    assert done.exit_code == 1 and "is a batch run's, not a service's" in done.output
    assert "resume" not in done.output, done.output
    write_private(batch / "run.json", '{"serve": true}')
    done = replay(batch)
    assert "is damaged (KeyError: 'config'); cannot replay this service" in done.output
    empty = tmp_path / "empty"
    empty.mkdir()
    done = replay(empty, "--config", "hannun-synthetic")
    assert done.exit_code == 1
    assert (f"{empty} holds no state folder of this config's service: serve-replay reads "
            f"{empty}/<party>/ for its parties, feature_holder.0, feature_holder.1, "
            "arm_puller.0, reward_holder.0, dealer.0") in done.output
    alone = replay(empty, "--set", "seed=3")
    assert alone.exit_code == 2 and "--set and --data go with --config" in alone.output


def test_a_service_that_decided_nothing_replays_to_nothing(tmp_path):
    folder = tmp_path / "gathered"
    for party in ("arm_puller.0", "reward_holder.0", "dealer.0", "feature_holder.0",
                  "feature_holder.1"):
        write_private(folder / party / "requests.wal", b"")
    write_private(folder / "arm_puller.0" / "ops.wal", b"")
    write_private(folder / "dealer.0" / "result.json",   # secret exploration: no key revealed
                  json.dumps({"exploration": "secret", "decisions": 0, "keys": []}))
    done = replay(folder, "--config", "hannun-synthetic")
    assert done.exit_code == 0, done.output
    assert "0 decision(s) in 0 batch(es)" in done.output
