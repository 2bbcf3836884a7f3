"""jdp and feducb (centralized and p2p) killed half-way and resumed from their checkpoints end
with exactly the result of an uninterrupted run at the same seed (seeded noise)."""

import json

import pytest

from deadlines import deadline
from partyprocs import kill_and_resume

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

EVERY = 10

# (config, section, horizon, kill once every party passed this round, victim)
CASES = {
    "jdp": ("configs/jdp-synthetic.toml", "jdp", 200, 40, "privatizer.0"),
    "feducb": ("configs/feducb-synthetic.toml", "feducb", 240, 50, "agent.1"),
    "feducb-p2p": ("configs/feducb-p2p.toml", "feducb", 240, 50, "agent.0"),
}
COMPARED = ("series", "agents", "cumulative_regret", "sync_rounds")


def settings(section, horizon, seed=5):
    # the emulated 3 ms hop keeps a round >= 3 ms, so on a fast machine the run is still
    # under way when progress (written every 0.25 s) shows the kill point; FedUCB's log-det
    # rule sends a message every round (its fixed schedules only at the sync rounds); no
    # probes of the duration first: what is checked is the resume
    paced = ["--set", 'feducb.schedule="threshold"'] if section == "feducb" else []
    return [*paced, "--no-estimate", "--seed", str(seed), "--set", f"{section}.horizon={horizon}",
            "--set", f"{section}.seeded_noise=true", "--set", f"run.deadline_s={deadline(15):g}",
            "--set", "run.net={one_way_ms = 3.0}"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_killed_dp_run_resumes_to_the_uninterrupted_result(cli, tmp_path, case):
    config, section, horizon, kill_after, victim = CASES[case]
    resumed = kill_and_resume(cli, config, settings(section, horizon), tmp_path / "run", victim,
                              every=EVERY, kill_after=kill_after)
    assert kill_after <= resumed["resumed_from"] < horizon
    assert resumed["resumed_from"] % EVERY == 0

    cli("run", config, "--out", tmp_path / "whole", *settings(section, horizon))
    whole = json.loads((tmp_path / "whole" / "summary.json").read_text())
    assert resumed["steps"] == len(resumed["series"]["regret"]) == horizon
    for key in COMPARED:
        assert resumed.get(key) == whole.get(key), key  # jdp has no agents[]

