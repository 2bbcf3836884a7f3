"""What `run` prints after a run names each number: Hannun's η as Theorem 1's privacy level
(not a time beside the progress lines' ETA), its agreement as the share of steps equal to the
float64 replay of the run's own exploration key, and which rounds per step is which."""

from mpcbandit.config import load_config
from mpcbandit.protocols.inproc_runner import inproc_summary_json
from mpcbandit.results import format_summary


def printed(config: str, overrides: list[str], resumed_from: int | None = None) -> str:
    """What `run` prints about an in-process run of config (as if resumed from resumed_from)."""
    return format_summary(inproc_summary_json(load_config(config, overrides),
                                              resumed_from=resumed_from))


def test_hannun_says_what_eta_agreement_and_each_rounds_per_step_are():
    text = printed("configs/hannun-synthetic.toml", ["hannun.iterations=6"])
    assert "(eta " not in text
    assert "eta = ln(|A| / eps) = 4.61 (Theorem 1)" in text and "differentially private" in text
    assert "float64 replay on this run's exploration key" in text
    assert "--plaintext --replay RUN_DIR" in text and "near-ties" in text
    assert "feature holders' online part" in text
    assert "communication rounds and" in text and "at the busiest party" in text
    assert "hops (the longest chain of messages" in text
    assert "protocol time on a network by the model: lan" in text and "without delays" in text


def test_a_resumed_run_says_which_steps_its_figures_cover():
    text = printed("configs/jdp-synthetic.toml", ["jdp.horizon=8"], resumed_from=3)
    assert "per step (over the 5 steps this run counted, resumed from step 3)" in text


def test_feducb_counts_steps_not_rounds():
    text = printed("configs/feducb-synthetic.toml", ["feducb.horizon=5"])
    assert "after 5 steps of 4 agents" in text and "rounds of" not in text
