"""The summary's time on a network (docs/summary.md, "Time on a network": local time + hops x
one-way delay + bytes / bandwidth) is what the emulated network costs: every protocol, run at a
few steps without and then with an emulated one-way delay, waits hops x one-way delay more,
within 10 %.

The delay is chosen per protocol so that the delays add up to a few seconds: the machine's noise
(another process's compute, a late wake-up) is then small beside them, and the model, linear in
the delay, is checked for lan's 0.25 ms and wan's 20 ms alike."""

from __future__ import annotations

import pytest

from deadlines import deadline
from mpcbandit.config import load_config
from mpcbandit.protocols.inproc_runner import inproc_summary_json
from mpcbandit.results import estimate_seconds

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

#: every protocol at a few steps: (config, overrides)
CASES = {
    "demo": ("configs/demo-sum.toml", ["demo.iterations=3"]),
    "mpcops": ("configs/mpc-ops.toml", ["mpcops.repeats=1", "mpcops.size=4", 'mpcops.ops=["lt"]']),
    "hannun": ("configs/hannun-synthetic.toml", ["hannun.iterations=2"]),
    "samba": ("configs/samba-synthetic.toml", ["samba.budget=6", "samba.arms=2",
                                               "samba.insecure_small_keys=true",
                                               "samba.paillier_bits=512"]),
    "o3m": ("configs/o3m-synthetic.toml", ["o3m.iterations=3"]),
    "jdp": ("configs/jdp-synthetic.toml", ["jdp.horizon=4"]),
    "feducb": ("configs/feducb-synthetic.toml", ["feducb.horizon=4"]),
    "feducb-p2p": ("configs/feducb-p2p.toml", ["feducb.horizon=4"]),
}
#: what the emulated delays of a case add up to (seconds), and the least one-way delay
DELAYS_S, LEAST_ONE_WAY_S = 3.0, 0.06
TOLERANCE = 0.10
#: a loaded machine can stall one run for a second: a case is measured again once
ATTEMPTS = 2


def summary_of(config: str, overrides: list[str], net: str) -> dict:
    """The summary of one in-process run (every party a thread) on net."""
    return inproc_summary_json(load_config(config, [*overrides, f"run.net={net}",
                                                    f"run.deadline_s={deadline(60):g}"]))


def measured_against_model(config: str, overrides: list[str]) -> tuple[float, float, dict]:
    """(delay the emulation added, hops x one-way delay, the run without delays' summary)."""
    local = summary_of(config, overrides, "'none'")
    one_way = max(LEAST_ONE_WAY_S, DELAYS_S / max(local["hops_total"], 1))
    delayed = summary_of(config, overrides, "{one_way_ms = %g}" % (one_way * 1e3))
    return (delayed["protocol_wall_s"] - local["protocol_wall_s"],
            delayed["hops_total"] * one_way, local)


@pytest.mark.slow
@pytest.mark.quiet  # measured delay against the model, within 10 %: a busy machine adds its own
@pytest.mark.parametrize("case", sorted(CASES))
def test_an_emulated_delay_costs_one_one_way_delay_per_hop(case):
    tries = []
    for _ in range(ATTEMPTS):
        added, model, local = measured_against_model(*CASES[case])
        tries.append((added, model))
        if abs(added - model) <= TOLERANCE * model:
            break
    else:
        pytest.fail(f"{case}: the emulated delays added {tries} (measured, hops x one-way) s")
    # the summary prices its own counters by the same model on the presets
    for net in ("lan", "wan"):
        assert local["estimate_s"][net] == pytest.approx(estimate_seconds(
            local["local_s"], local["hops_total"], local["bytes_per_step"] * local["steps"], net))


def test_hops_count_a_chain_through_several_parties_not_one_partys_rounds():
    """Hannun's reward reaches the feature holders by p' -> environment -> p'' -> holders: a
    step waits more one-way delays than the holders have rounds; demo's inputs send every
    share ahead, so its run waits two delays however many repetitions it makes."""
    hannun = summary_of(*CASES["hannun"], "'none'")
    holders = max(p["rounds"] for p in hannun["parties"] if p["role"] == "feature_holder")
    assert hannun["hops_total"] > holders
    demo = summary_of(CASES["demo"][0], ["demo.iterations=20"], "'none'")
    assert demo["hops_total"] == 2 < demo["rounds_total"]
