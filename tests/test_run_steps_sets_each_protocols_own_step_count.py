"""`--steps N` is the one name for a run's length: it sets whichever key the protocol counts its
steps in (hannun/o3m/demo iterations, samba budget, feducb/jdp horizon), on `run` and `party`."""

import json

import pytest

from mpcbandit.config import load_config
from mpcbandit.protocols import get_protocol

from conftest import REPO

#: a shipped config of every protocol that has bandit steps, and a small step count for it
CASES = {"demo": ("demo-sum.toml", 3), "feducb": ("feducb-synthetic.toml", 7),
         "hannun": ("hannun-synthetic.toml", 9), "jdp": ("jdp-synthetic.toml", 11),
         "o3m": ("o3m-synthetic.toml", 13), "samba": ("samba-synthetic.toml", 40)}


def test_every_protocol_with_steps_is_covered():
    with_steps = {name for name in CASES if get_protocol(name).steps is not None}
    assert with_steps == set(CASES)
    assert get_protocol("mpcops").steps is None


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_run_steps_sets_the_protocols_step_key(protocol, cli, tmp_path):
    config, steps = CASES[protocol]
    cfg = load_config(REPO / "configs" / config)
    key, _ = get_protocol(protocol).steps(cfg.section)
    assert getattr(cfg.section, key) != steps  # the option, not the file, sets it
    cli("run", f"configs/{config}", "--steps", steps, "--plaintext", "--out", tmp_path / "r")
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["config_resolved"][protocol][key] == steps


def test_party_steps_sets_the_step_key_and_a_bad_count_names_it(cli):
    proc = cli("party", "configs/samba-synthetic.toml", "--role", "dc", "--steps", "1",
               check=False)
    assert proc.returncode != 0 and "samba.budget" in proc.stderr


def test_steps_on_a_protocol_without_steps_says_so(cli):
    proc = cli("run", "configs/mpc-ops.toml", "--steps", "5", check=False)
    assert proc.returncode != 0
    assert "mpcops" in proc.stderr and "--steps" in proc.stderr
