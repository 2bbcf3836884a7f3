import json
import math
import subprocess
import sys

import pytest

from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError
from mpcbandit.protocols import get_protocol

CFG = "configs/hannun-synthetic.toml"


def test_config_rejects_impossible_settings_naming_the_key():
    with pytest.raises(ConfigError, match="hannun.dims"):
        load_config(CFG, ["hannun.dims=2", "hannun.feature_holders=3"])
    with pytest.raises(ConfigError, match="hannun.arms"):
        load_config(CFG, ["hannun.data=mnist", "hannun.arms=12"])
    with pytest.raises(ConfigError, match="hannun.data_dir"):
        load_config(CFG, ["hannun.data=mnist", "hannun.data_dir=/nonexistent"])
    with pytest.raises(ConfigError, match="hannun.epsilon"):
        load_config(CFG, ["hannun.epsilon=1.5"])


def test_party_table_has_feature_holders_puller_reward_holder_dealer_environment():
    cfg = load_config(CFG, ["hannun.feature_holders=3"])
    assert [p.name for p in cfg.parties()] == [
        "feature_holder.0", "feature_holder.1", "feature_holder.2",
        "arm_puller.0", "reward_holder.0", "dealer.0", "environment.0"]


def test_plaintext_cli_writes_summary_with_eta(tmp_path):
    out = tmp_path / "run"
    subprocess.run([sys.executable, "-m", "mpcbandit", "run", CFG, "--plaintext", "--out", str(out),
                    "--set", "hannun.iterations=200"], check=True, capture_output=True)
    s = json.loads((out / "summary.json").read_text())
    assert s["plaintext"] and s["steps"] == 200 and len(s["series"]["arms"]) == 200
    assert s["cumulative_reward"] == sum(s["series"]["rewards"])
    assert s["eta"] == pytest.approx(math.log(10 / 0.1))


def test_plaintext_reference_replays_the_config_seed_stream_whatever_the_mode():
    plain = get_protocol("hannun").plaintext
    secret = load_config(CFG, ["hannun.iterations=100"])
    assert secret.section.exploration == "secret"  # the default
    seeded = load_config(CFG, ["hannun.iterations=100", "hannun.exploration=seeded"])
    assert plain(secret)["series"]["arms"] == plain(seeded)["series"]["arms"]
