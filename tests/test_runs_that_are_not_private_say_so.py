"""A run whose randomness any party can recompute from the public config, or whose settings
fall outside the paper's privacy guarantee, warns before it starts and records it in
summary.json; a deployment setting does neither."""

import json

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.protocols import privacy_record


@pytest.mark.parametrize("config,sets,private,named", [
    ("samba-synthetic.toml", ["samba.fresh_seeds=false"], False, "samba.fresh_seeds = false"),
    ("samba-synthetic.toml", ["samba.fresh_seeds=true"], True, None),
    ("jdp-synthetic.toml", ["jdp.seeded_noise=true"], False, "jdp.seeded_noise = true"),
    ("jdp-synthetic.toml", ["jdp.seeded_noise=false"], True, None),
    ("feducb-synthetic.toml", ["feducb.schedule=mlogt", "feducb.seeded_noise=true"], False,
     "feducb.seeded_noise = true"),
    ("feducb-synthetic.toml", ["feducb.schedule=threshold", "feducb.seeded_noise=false"], False,
     "sync trigger"),
    ("feducb-synthetic.toml", ["feducb.schedule=mlogt", "feducb.seeded_noise=false"], True, None),
    ("hannun-synthetic.toml", ["hannun.exploration=seeded"], False, "hannun.exploration = 'seeded'"),
    ("hannun-synthetic.toml", ["hannun.exploration=secret"], True, None),
    ("demo-sum.toml", ['run.security="none"'], False, "run.security = 'none'"),
    ("o3m-synthetic.toml", [], True, None),
])
def test_privacy_record_names_what_is_not_private(config, sets, private, named):
    record = privacy_record(load_config(REPO / "configs" / config, sets))
    assert record["private"] is private
    if named:
        assert any(named in w for w in record["warnings"]), record
    else:
        assert record["warnings"] == []


def test_a_seeded_run_warns_on_the_console_and_in_the_summary(cli, tmp_path):
    proc = cli("run", "configs/jdp-synthetic.toml", "--set", "jdp.seeded_noise=true",
               "--set", "jdp.horizon=20", "--out", tmp_path)
    assert "WARNING: this run is not private: jdp.seeded_noise = true" in proc.stderr
    privacy = json.loads((tmp_path / "summary.json").read_text())["privacy"]
    assert privacy["private"] is False and "jdp.seeded_noise = true" in privacy["warnings"][0]


def test_a_private_run_says_nothing(cli, tmp_path):
    proc = cli("run", "configs/jdp-synthetic.toml", "--set", "jdp.seeded_noise=false",
               "--set", "jdp.horizon=20", "--out", tmp_path)
    assert "WARNING" not in proc.stderr
    privacy = json.loads((tmp_path / "summary.json").read_text())["privacy"]
    assert privacy["private"] is True and privacy["warnings"] == []
    assert privacy["noise"] == "gaussian"  # the protocol's own privacy parameters stay beside


@pytest.mark.parametrize("config, named", [("samba-paper", "samba.fresh_seeds"),
                                           ("feducb-paper", "feducb.schedule")])
def test_check_warns_of_a_reproduction_mode_config_as_run_does(cli, config, named):
    proc = cli("check", config)
    assert proc.returncode == 0
    assert "WARNING: this run is not private" in proc.stderr and named in proc.stderr


def test_check_of_a_private_config_says_nothing(cli):
    assert "WARNING" not in cli("check", "hannun-synthetic").stderr
