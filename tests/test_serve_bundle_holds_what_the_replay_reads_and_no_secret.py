"""`mpcbandit serve-bundle --state DIR --out BUNDLE` copies what serve-replay reads of one
party's state folder (its logs, the dealer's revealed keys, its record) into a new private
folder with a manifest, and nothing else: no checkpoint, no MAC key, no key schedule. `mpcbandit
serve-replay DIR --config CONFIG` replays DIR/<party>/ bundles as it replays the state folders
they came from, and refuses by name a file altered since, bundles of two services, a party
twice."""

import json
import stat

from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.files import write_private
from mpcbandit.serve.bundle import MANIFEST
from serve_support import LOGGED_SETS, service_logs

SETS = [a for s in LOGGED_SETS for a in ("--set", s)]
PARTIES = ["feature_holder.0", "feature_holder.1", "arm_puller.0", "reward_holder.0"]
SECRET = bytes(range(32))   # stands for a key the state folder must keep to itself


def cli(*args):
    return CliRunner().invoke(main, [*map(str, args)])


def _states(tmp_path):
    """Every party's state folder as its party leaves it, secrets beside the logs."""
    states = tmp_path / "states"
    service_logs(states, run_id="r1")
    for party in PARTIES:
        write_private(states / party / "checkpoints" / party / ".mac_key", SECRET)
        write_private(states / party / "checkpoints" / party / "keys.ckpt", b"K" + SECRET)
    return states


def _bundles(tmp_path, states):
    gathered = tmp_path / "gathered"
    for party in PARTIES:
        done = cli("serve-bundle", "--state", states / party, "--out", gathered / party)
        assert done.exit_code == 0, done.output
        assert f"bundle of {party} (service 'r1')" in done.output and "manifest sha256" in done.output
    return gathered


def test_a_bundle_holds_exactly_what_the_replay_reads_privately(tmp_path):
    gathered = _bundles(tmp_path, _states(tmp_path))
    for party in PARTIES:
        held = sorted(p.name for p in (gathered / party).iterdir())
        logs = ["ops.wal", "requests.wal"] if party == "arm_puller.0" else ["requests.wal"]
        assert held == sorted([MANIFEST, "run.json", *logs]), (party, held)
        manifest = json.loads((gathered / party / MANIFEST).read_text())
        assert manifest["party"] == party and manifest["run_id"] == "r1"
        assert sorted(manifest["files"]) == sorted(["run.json", *logs])
        assert stat.S_IMODE((gathered / party).stat().st_mode) == 0o700
        for f in (gathered / party).iterdir():
            assert stat.S_IMODE(f.stat().st_mode) == 0o600, f
            assert SECRET not in f.read_bytes() and SECRET.hex() not in f.read_text(), f


def test_serve_replay_on_bundles_reports_as_on_the_state_folders(tmp_path):
    states = _states(tmp_path)
    gathered = _bundles(tmp_path, states)
    on_states = cli("serve-replay", states, "--config", "hannun-synthetic", *SETS)
    on_bundles = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert on_bundles.exit_code == on_states.exit_code == 0, on_bundles.output
    assert on_bundles.output == on_states.output
    assert "120 of 120 arms agree (100.00 %)" in on_bundles.output


def test_a_bundle_altered_since_is_refused_naming_the_file(tmp_path):
    gathered = _bundles(tmp_path, _states(tmp_path))
    log = gathered / "arm_puller.0" / "requests.wal"
    raw = bytearray(log.read_bytes())
    raw[-3] ^= 1
    log.write_bytes(bytes(raw))
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert f"{log} differs from the bundle's manifest" in done.output, done.output
    log.unlink()
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert f"{log} is missing: the bundle's manifest" in done.output, done.output


def test_a_file_beside_a_bundle_is_refused_naming_it(tmp_path):
    gathered = _bundles(tmp_path, _states(tmp_path))
    write_private(gathered / "reward_holder.0" / "ops.wal", b"")
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert f"{gathered / 'reward_holder.0' / 'ops.wal'} is not in the bundle's manifest" in \
        done.output, done.output


def test_bundles_of_two_services_are_refused_naming_them(tmp_path):
    states = _states(tmp_path)
    write_private(states / "reward_holder.0" / "run.json",
                  json.dumps({"party": "reward_holder.0", "run_id": "r2"}))
    gathered = tmp_path / "gathered"
    for party in PARTIES:
        assert cli("serve-bundle", "--state", states / party, "--out",
                   gathered / party).exit_code == 0
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert (f"{gathered / 'reward_holder.0'} is a bundle of service 'r2', "
            f"{gathered / 'arm_puller.0'} of 'r1': gather the bundles of one service") in \
        done.output, done.output


def test_a_party_bundled_twice_is_refused_naming_both(tmp_path):
    states = _states(tmp_path)
    gathered = _bundles(tmp_path, states)
    assert cli("serve-bundle", "--state", states / "feature_holder.0", "--out",
               gathered / "copy").exit_code == 0
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert (f"{gathered / 'copy'} and {gathered / 'feature_holder.0'} are both bundles of "
            "feature_holder.0: give each party's bundle once") in done.output, done.output
    (gathered / "feature_holder.0").rename(tmp_path / "aside")
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert (f"{gathered / 'copy'} holds the bundle of feature_holder.0, not of copy") in \
        done.output, done.output


def test_serve_bundle_refuses_a_used_folder_and_a_missing_log_by_name(tmp_path):
    states = _states(tmp_path)
    used = tmp_path / "used"
    write_private(used / "x", b"")
    done = cli("serve-bundle", "--state", states / "arm_puller.0", "--out", used)
    assert done.exit_code == 1 and f"cannot write a bundle in {used}: it is not empty" in \
        done.output, done.output
    (states / "arm_puller.0" / "ops.wal").unlink()
    done = cli("serve-bundle", "--state", states / "arm_puller.0", "--out", tmp_path / "b")
    assert done.exit_code == 1
    assert f"{states / 'arm_puller.0' / 'ops.wal'} is missing: serve-replay reads it of " \
           "arm_puller.0" in done.output, done.output
    assert not (tmp_path / "b").exists()
    done = cli("serve-bundle", "--state", tmp_path / "nothing", "--out", tmp_path / "b")
    assert done.exit_code == 1 and "is not a folder" in done.output


def test_bundles_and_state_folders_are_not_mixed(tmp_path):
    states = _states(tmp_path)
    gathered = _bundles(tmp_path, states)
    (gathered / "reward_holder.0").rename(tmp_path / "aside")
    (states / "reward_holder.0").rename(gathered / "reward_holder.0")
    done = cli("serve-replay", gathered, "--config", "hannun-synthetic", *SETS)
    assert done.exit_code == 1
    assert f"{gathered / 'reward_holder.0'} is a state folder" in done.output, done.output
