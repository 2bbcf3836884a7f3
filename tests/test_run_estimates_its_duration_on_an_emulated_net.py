"""Before a run on an emulated network, `run` probes it and says how long it will take, or why
it does not: here with real processes on the emulated lan (the model itself, with fake probes:
test_the_duration_estimate_is_a_model_of_the_run.py)."""

import pytest

from mpcbandit.config import load_config
from mpcbandit.estimate import fit, probe

DEMO = "configs/demo-sum.toml"


def test_two_real_probes_on_lan_measure_every_part_of_the_model():
    cfg = load_config(DEMO, ["run.net='lan'", "demo.length=8"])
    a, b = probe(cfg, 4), probe(cfg, 10)
    for p in (a, b):
        # every step after the first is timed by the slowest party; start-up is apart from them
        assert p.timed_steps == p.steps - 1 and p.timed_s > 0
        assert p.startup_s > 0 and p.protocol_s > 0 and p.seconds == p.startup_s + p.protocol_s
    est = fit((a, b), 100_000, cfg.net)
    # demo's inputs send every share ahead: its run waits two delays however many steps it makes
    assert a.hops == b.hops and est.hops_per_step == 0
    assert est.bytes_per_step > 0 and est.compute_s > 0
    assert est.seconds == pytest.approx(sum(est.parts().values()))
    assert est.low_s <= est.seconds <= est.high_s


def test_a_short_run_on_an_emulated_net_says_why_it_is_not_estimated(cli, tmp_path):
    lines = cli("run", DEMO, "--out", tmp_path / "run", "--net", "lan", "--steps", "20", "--set",
                "demo.length=8").stdout.splitlines()
    why = next(i for i, line in enumerate(lines) if "duration on lan not estimated" in line)
    assert "20 steps are too few to probe within a tenth of the run" in lines[why]
    assert why < next(i for i, line in enumerate(lines) if line.startswith("demo:"))
    assert not any(line.startswith("took ") for line in lines)
