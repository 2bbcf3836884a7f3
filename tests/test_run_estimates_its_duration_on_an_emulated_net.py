"""Before a long run on an emulated network, `run` probes it and says how long it will take."""

import json
import re

import pytest

from mpcbandit import estimate
from mpcbandit.config import load_config
from mpcbandit.estimate import PROBE_EXTRA_STEPS, PROBE_SHARE, estimate_duration

DEMO = "configs/demo-sum.toml"
LONG = PROBE_SHARE * (1 + PROBE_EXTRA_STEPS[1])  # demo's fewest steps are 1


def test_only_long_runs_on_an_emulated_network_are_probed():
    assert estimate.worth_estimating(load_config(DEMO, [f"demo.iterations={LONG}", "run.net='wan'"]))
    assert not estimate.worth_estimating(load_config(DEMO, [f"demo.iterations={LONG - 1}", "run.net='wan'"]))
    assert not estimate.worth_estimating(load_config(DEMO, [f"demo.iterations={LONG}", "run.net='none'"]))
    assert estimate.worth_estimating(load_config(DEMO, [f"demo.iterations={LONG}",
                                               "run.net={one_way_ms = 1}"]))
    # the fewest steps a section allows move the probes: SAMBA pulls every arm once first
    samba = load_config("configs/samba-synthetic.toml", ["run.net='lan'", "samba.arms=20",
                                                        f"samba.budget={LONG}"])
    assert not estimate.worth_estimating(samba)


def test_the_estimate_extends_the_line_through_both_probes(monkeypatch):
    cfg = load_config(DEMO, ["demo.iterations=1000", "run.net='wan'"])
    probed = []

    def fake_run(probe, out_dir, **_):
        n = probe.section.iterations
        probed.append((n, probe.net.name))
        # the summary's busiest party sends 100 and receives 50 bytes per step
        return {"wall_s": 2.0 + 0.25 * n, "rounds_total": 3 + 2 * n, "steps": n,
                "bytes_per_step": 150.0}

    monkeypatch.setattr(estimate, "run_local", fake_run)
    est = estimate_duration(cfg)
    sizes = tuple(1 + e for e in PROBE_EXTRA_STEPS)
    assert probed == [(sizes[0], "wan"), (sizes[1], "wan")]  # on the run's own network
    assert est.seconds == pytest.approx(2.0 + 0.25 * 1000)
    assert est.seconds_per_step == pytest.approx(0.25)
    assert est.rounds_per_step == pytest.approx(2.0) and est.bytes_per_step == pytest.approx(150)
    assert est.probe_steps == sizes and est.steps == 1000
    assert "4:12 for 1,000 steps" in est.line("wan")


def test_run_prints_the_estimate_first_and_the_time_it_took_last(cli, tmp_path):
    out = tmp_path / "run"
    proc = cli("run", DEMO, "--out", out, "--net", "one_way_ms=1", "--set",
               f"demo.iterations={LONG}", "--set", "demo.length=8")
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "estimated duration on 1ms" in line)
    assert re.search(rf"for {LONG} steps \(.* ms, 2\.0 rounds and .* KB per step; measured by "
                     rf"probes of {1 + PROBE_EXTRA_STEPS[0]} and {1 + PROBE_EXTRA_STEPS[1]} steps",
                     lines[first])
    assert first < next(i for i, line in enumerate(lines) if line.startswith("demo:"))
    assert re.fullmatch(r"took \d+:\d\d \(estimated \d+:\d\d\)", lines[-1])
    # the probes ran elsewhere: the run's folder holds the run alone
    assert json.loads((out / "summary.json").read_text())["steps"] == LONG
    quiet = cli("run", DEMO, "--out", tmp_path / "quiet", "--net", "one_way_ms=1", "--set",
                f"demo.iterations={LONG}", "--set", "demo.length=8", "--no-estimate")
    assert "estimated" not in quiet.stdout
