"""SAMBA killed part-way and resumed from its checkpoints ends with exactly the arms, rewards
and (Paillier-decrypted) total of an uninterrupted run at the same seed. The data owners keep
their arm state (sums, pulls, Pursuit's p, Thompson's sampler) and reward history; the
Controller and Comp keep only their seeds, DC nothing: the resumed run sets up fresh Paillier
and AES keys, as nothing encrypted under the old ones is needed after a data owner's
checkpoint."""

import json

import pytest

from deadlines import deadline
from partyprocs import assert_same_cost_per_step, kill_and_resume

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

EVERY = 25
BUDGET = 200  # the size proves nothing here: the state carried across the resume does
#: four data owners (K + 3 processes: 7, not the config's 13, each ~0.3 CPU-s to start in each
#: of the three runs a case makes): every owner still holds arm state to carry across the
#: resume, and do.3, one of the victims, is the last of them. (At 4 arms a run of BUDGET steps
#: on an emulated net is long enough to be probed for its duration first: --no-estimate.)
ARMS = 4


def settings(algorithm):
    return ["--no-estimate", "--seed", "5", "--set", f"samba.budget={BUDGET}",
            "--set", f"samba.arms={ARMS}", "--set", f'samba.algorithm="{algorithm}"',
            "--set", "samba.paillier_bits=512", "--set", "samba.insecure_small_keys=true",
            "--set", "samba.fresh_seeds=false",  # two runs with the same seeds: comparable
            "--set", f"run.deadline_s={deadline(15):g}", "--set", "run.net={one_way_ms = 0.3}"]


@pytest.mark.parametrize("algorithm, victim", [("thompson", "do.3"), ("epsilon-greedy", "controller.0"),
                                               ("pursuit", "comp.0")])
def test_killed_samba_run_resumes_to_the_uninterrupted_result(cli, tmp_path, algorithm, victim):
    resumed = kill_and_resume(cli, "configs/samba-synthetic.toml", settings(algorithm),
                              tmp_path / "run", victim, every=EVERY, kill_after=60,
                              timeout=deadline(60))
    assert 50 <= resumed["resumed_from"] < BUDGET and resumed["resumed_from"] % EVERY == 0

    cli("run", "configs/samba-synthetic.toml", "--out", tmp_path / "whole", *settings(algorithm))
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert len(resumed["series"]["arms"]) == BUDGET
    assert resumed["series"] == whole["series"]
    assert resumed["cumulative_reward"] == whole["cumulative_reward"]
    assert resumed["cumulative_reward"] == sum(resumed["series"]["rewards"])
    assert_same_cost_per_step(resumed, whole)
