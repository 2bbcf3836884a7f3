"""The duration estimate `run` prints before a run on an emulated network is a model of the run
(start-up + set-up + steps x (hops x one-way delay + bytes / bandwidth + compute)) whose parts two
probes measure, the probes within a tenth of the run: here with fake probes, no processes."""

import re

import pytest
from click.testing import CliRunner

from mpcbandit import estimate, launch
from mpcbandit.cli import main
from mpcbandit.config import load_config
from mpcbandit.estimate import (PROBE_SHARE, NotEstimated, Probe, fit, second_probe_steps,
                                why_not_probed)

HANNUN = "configs/hannun-synthetic.toml"
LAN = load_config(HANNUN, ["run.net='lan'"]).net


def fake_probe(steps, *, startup, setup, step, hops=(6, 20), nbytes=(1000.0, 300e3)):
    """A probe of a run whose every part is known: start-up, set-up, a step's time (delays
    included) and its counters ((set-up, per step) hops and bytes)."""
    return Probe(steps=steps, seconds=startup + setup + steps * step,
                 protocol_s=setup + steps * step,
                 hops=hops[0] + hops[1] * steps, bytes=nbytes[0] + nbytes[1] * steps,
                 timed_steps=steps - 1, timed_s=(steps - 1) * step)


def hannun_on_lan(steps):
    """The Hannun config of `steps` steps on the lan preset."""
    return load_config(HANNUN, ["run.net='lan'", f"hannun.iterations={steps}"])


def test_the_estimate_of_a_fake_run_is_the_sum_of_its_parts():
    step = 0.030
    a = fake_probe(4, startup=5.0, setup=0.2, step=step)
    b = fake_probe(120, startup=7.0, setup=0.4, step=step * 1.1)
    est = fit((b, a), 10_000, LAN)
    delay = 20 * LAN.one_way_s + 300e3 / LAN.bytes_per_s
    assert est.hops_per_step == pytest.approx(20) and est.bytes_per_step == pytest.approx(300e3)
    assert est.delay_s == pytest.approx(delay)
    # a step over all the steps both probes timed: 3 of the first, 119 of the second
    assert est.compute_s == pytest.approx((3 * step + 119 * step * 1.1) / 122 - delay)
    assert est.startup_s == pytest.approx(6.0) and est.setup_s == pytest.approx(0.3)
    assert est.seconds == pytest.approx(sum(est.parts().values()))
    assert est.seconds == pytest.approx(6.0 + 0.3 + 10_000 * (delay + est.compute_s))
    # the range: each probe extended alone, with its own start-up, set-up and step
    assert est.low_s == pytest.approx(5.0 + 0.2 + 10_000 * step)
    assert est.high_s == pytest.approx(7.0 + 0.4 + 10_000 * step * 1.1)
    assert est.low_s <= est.seconds <= est.high_s
    assert est.probes == (a, b) and est.probes_s == pytest.approx(a.seconds + b.seconds)


def test_the_range_holds_the_estimate_and_each_probes_own_extrapolation():
    # the short probe started slowly and stepped fast, the long one the other way round
    a = fake_probe(4, startup=9.0, setup=0.2, step=0.020)
    b = fake_probe(400, startup=3.0, setup=0.2, step=0.025)
    est = fit((a, b), 1_000, LAN)
    own = [p.startup_s + p.setup_s + 1_000 * p.step_s for p in (a, b)]
    assert est.seconds > max(own)  # start-ups' mean, the long probe's step
    assert est.low_s == pytest.approx(min(own)) and est.high_s == est.seconds


def test_the_printed_estimate_says_start_up_is_included_and_what_the_range_assumes():
    est = fit((fake_probe(4, startup=5.0, setup=0.2, step=0.03),
               fake_probe(120, startup=7.0, setup=0.4, step=0.033)), 10_000, LAN)
    first, parts, probes = est.lines("lan")
    assert re.fullmatch(r"estimated duration on lan: \d+:\d\d \(range \d+:\d\d to \d+:\d\d\) for "
                        r"10,000 steps, start-up included", first)
    assert "start-up 6.0 s + set-up 0.30 s + 10,000 x (20.0 hops x 0.25 ms + 300.0 KB / " in parts
    assert "probes of 4 and 120 steps" in probes and "as loaded as during them" in probes


def test_the_probes_planned_steps_stay_within_a_tenth_of_the_run():
    margin = estimate.FIRST_STEP_MARGIN
    for startup, setup, step in [(5.0, 0.2, 0.03), (20.0, 3.0, 0.03), (2.0, 0.0, 0.001),
                                 (5.0, 10.0, 0.5)]:
        for steps in (1_000, 10_000, 100_000):
            # the run's steps take `step`; the first probe's few took from that to margin x that
            for seen in (step, step * margin):
                first = fake_probe(4, startup=startup, setup=setup, step=seen)
                n2 = second_probe_steps(first, steps)
                if n2 is None:  # even the fewest steps a second probe runs would not fit
                    run_seen = startup + setup + steps * seen
                    fewest = 4 + estimate.LEAST_SPAN
                    assert (first.seconds + startup + setup + fewest * seen
                            > run_seen / (PROBE_SHARE * margin))
                    continue
                run = startup + setup + steps * step
                assert first.seconds + startup + setup + n2 * step <= run / PROBE_SHARE
                assert n2 >= 4 + estimate.LEAST_SPAN


def test_a_run_too_short_to_probe_says_why_it_is_not_estimated(monkeypatch):
    fewest = PROBE_SHARE * (2 * (1 + estimate.FIRST_EXTRA_STEPS) + estimate.LEAST_SPAN)
    assert (f"{fewest - 1} steps are too few to probe within a tenth"
            in why_not_probed(hannun_on_lan(fewest - 1)))
    assert why_not_probed(hannun_on_lan(fewest)) is None
    assert "no bandit steps" in why_not_probed(load_config("configs/mpc-ops.toml",
                                                           ["run.net='lan'"]))
    # long enough in steps, too short in time: the first probe says so, and no second is made
    probed = []

    def slow_start(cfg, steps, insecure=False):
        probed.append(steps)
        return fake_probe(steps, startup=10.0, setup=0.5, step=0.03)

    monkeypatch.setattr(estimate, "probe", slow_start)
    got = estimate.estimate_duration(hannun_on_lan(1000))
    assert probed == [4] and isinstance(got, NotEstimated)
    assert re.search(r"too short to probe within a tenth of it: a first probe of 4 steps took "
                     r"10\.6 s \(start-up 10\.0 s\), by which the run takes about 0:40; the "
                     r"probes are planned within 2\.0 s by it \(a tenth, divided by 2 for the "
                     r"first probe's few steps\), and a second probe of 7 steps or more would "
                     r"not fit", got.lines("lan")[0])


def test_run_prints_the_estimate_first_and_the_time_it_took_with_start_up_last(monkeypatch,
                                                                              tmp_path):
    probed = []

    def quick(cfg, steps, insecure=False):
        probed.append(steps)
        return fake_probe(steps, startup=1.0, setup=0.0, step=0.01)

    def fake_run(cfg, out_dir, *, echo, **_):
        echo("hannun: the run's own lines")
        return {"wall_s": 1.0}

    monkeypatch.setattr(estimate, "probe", quick)
    monkeypatch.setattr(launch, "run_local", fake_run)
    got = CliRunner().invoke(main, ["run", HANNUN, "--out", str(tmp_path / "run"), "--net", "lan",
                                    "--steps", "100000"])
    assert got.exit_code == 0, got.output
    lines = got.output.splitlines()
    assert probed[0] == 4 and len(probed) == 2 and probed[1] > 4
    at = next(i for i, line in enumerate(lines) if "estimated duration on lan" in line)
    assert at < lines.index("hannun: the run's own lines")
    assert re.fullmatch(r"took \d+:\d\d, start-up included \(estimated \d+:\d\d, range \d+:\d\d "
                        r"to \d+:\d\d\)", lines[-1])
    quiet = CliRunner().invoke(main, ["run", HANNUN, "--out", str(tmp_path / "quiet"), "--net",
                                      "lan", "--steps", "100000", "--no-estimate"])
    assert quiet.exit_code == 0 and "estimat" not in quiet.output and len(probed) == 2
