"""A secure Hannun run with secret exploration (the default) reveals its exploration key at the
end; `mpcbandit run CONFIG --plaintext --replay RUN_DIR` runs the float64 reference on that key
and makes the secure run's choices: the same arms and rewards (but at fixed-point near-ties, as
the summary's agreement_with_replay says), where a plain `--plaintext` draws the seed's stream."""

import json

import numpy as np

from hannun_inproc import SECRET_AGREEMENT
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

CONFIG = "configs/hannun-synthetic.toml"
SETS = ["--seed", "12", "--set", "hannun.iterations=40", "--set", "hannun.epsilon=0.3"]


def summary(folder):
    return json.loads((folder / "summary.json").read_text())


def test_plaintext_replay_of_a_secret_run_makes_its_choices(cli, tmp_path):
    cli("run", CONFIG, "--out", tmp_path / "secure", *SETS)
    secure = summary(tmp_path / "secure")
    assert secure["exploration"] == "secret" and secure["agreement_with_replay"] >= SECRET_AGREEMENT

    proc = cli("run", CONFIG, "--out", tmp_path / "replay", "--plaintext", "--replay",
               tmp_path / "secure", *SETS)
    replay = summary(tmp_path / "replay")
    assert replay["plaintext"] and replay["exploration"] == "replay"
    assert replay["exploration_key"] == secure["exploration_key"]
    assert "replayed from a secure run" in proc.stdout
    # the replay is the run the secure summary compared itself with: equal at every step but
    # a fixed-point near-tie (in most runs none), rewards equal wherever the arms are
    arms, ref = np.array(secure["series"]["arms"]), np.array(replay["series"]["arms"])
    assert np.mean(arms == ref) == secure["agreement_with_replay"]
    assert replay["cumulative_reward"] == secure["replay_cumulative_reward"]
    same = arms == ref
    assert (np.array(secure["series"]["rewards"])[same]
            == np.array(replay["series"]["rewards"])[same]).all()

    # a plain --plaintext draws the config seed's stream: another key, another run
    cli("run", CONFIG, "--out", tmp_path / "seeded", "--plaintext", *SETS)
    seeded = summary(tmp_path / "seeded")
    assert seeded["exploration"] == "seeded" and seeded["exploration_key"] != secure["exploration_key"]
    assert seeded["series"]["arms"] != secure["series"]["arms"]

    # what it cannot replay is refused before anything runs, naming the folder and why
    for args, says in [
        (["--seed", "13", *SETS[2:]], "that run's seed differs from this config's"),
        ([*SETS, "--set", "hannun.arms=5"], "that run's hannun.arms differs"),
    ]:
        proc = cli("run", CONFIG, "--out", tmp_path / "refused", "--plaintext", "--replay",
                   tmp_path / "secure", *args, check=False)
        assert proc.returncode != 0 and says in proc.stderr and str(tmp_path / "secure") in proc.stderr
        assert not (tmp_path / "refused").exists()
    for folder, says in [(tmp_path / "seeded", "a --plaintext run's summary"),
                         (tmp_path / "nowhere", "no summary.json there")]:
        proc = cli("run", CONFIG, "--out", tmp_path / "refused", "--plaintext", "--replay",
                   folder, *SETS, check=False)
        assert proc.returncode != 0 and says in proc.stderr, proc.stderr
    proc = cli("run", CONFIG, "--out", tmp_path / "refused", "--replay", tmp_path / "secure",
               *SETS, check=False)
    assert proc.returncode != 0 and "give --plaintext too" in proc.stderr
    proc = cli("run", "configs/demo-sum.toml", "--out", tmp_path / "refused", "--plaintext",
               "--replay", tmp_path / "secure", check=False)
    assert proc.returncode != 0 and "protocol demo has nothing to replay" in proc.stderr


def test_a_run_on_the_parties_own_folders_is_replayed_from_the_folders(cli, tmp_path):
    """Its collector has no data to replay (agreement_with_replay is null); `--plaintext --data
    DIR --replay RUN_DIR` reads every folder and replays the revealed key."""
    # seeded: one fixed stream, so the run's near-ties (none at this seed) are the same each time
    steps = ["--steps", "30", "--seed", "12", "--set", 'hannun.exploration="seeded"']
    cli("data", "split", CONFIG, *steps, "--out", tmp_path / "data")
    cli("run", CONFIG, *steps, "--data", tmp_path / "data", "--out", tmp_path / "secure")
    secure = summary(tmp_path / "secure")
    assert secure["agreement_with_replay"] is None and secure["replay_cumulative_reward"] is None
    cli("run", CONFIG, *steps, "--data", tmp_path / "data", "--plaintext", "--replay",
        tmp_path / "secure", "--out", tmp_path / "replay")
    replay = summary(tmp_path / "replay")
    assert replay["exploration_key"] == secure["exploration_key"]
    assert replay["series"]["arms"] == secure["series"]["arms"]
    assert replay["series"]["rewards"] == secure["series"]["rewards"]
