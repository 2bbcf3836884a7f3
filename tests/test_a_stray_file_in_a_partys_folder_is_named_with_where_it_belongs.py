"""A table put in another party's folder would never be read: the party warns as it reads its
folder, naming the folder where the table belongs (`data split`'s layout), or that no party of
the protocol reads it. A folder holding only what its role reads says nothing."""

import logging
import shutil

import pytest

from mpcbandit.config import load_config
from mpcbandit.data.split import write_split
from mpcbandit.protocols import get_protocol
from mpcbandit.shipped_configs import config_path


@pytest.fixture
def hannun(tmp_path):
    cfg = load_config(config_path("hannun-synthetic"),
                      ["hannun.iterations=20", 'hannun.norms="scale"'])
    return cfg, write_split(cfg, tmp_path / "data")


def _source(cfg, party: str, data):
    role, index = party.rsplit(".", 1)
    return get_protocol(cfg.protocol).source(cfg, role, int(index), data / party)


def test_a_rewards_table_in_the_reward_holders_folder_names_the_environments(hannun, caplog):
    cfg, data = hannun
    shutil.copy(data / "environment.0" / "rewards.csv", data / "reward_holder.0" / "rewards.csv")
    caplog.set_level(logging.WARNING, "mpcbandit.data")
    _source(cfg, "reward_holder.0", data)
    [warning] = [r.getMessage() for r in caplog.records]
    assert "reward_holder.0/rewards.csv is not read by reward_holder.0" in warning
    assert "it belongs in the folder of environment.0" in warning


def test_a_file_no_party_reads_is_named_as_such(hannun, caplog):
    cfg, data = hannun
    (data / "feature_holder.1" / "notes.txt").write_text("kept here by hand")
    caplog.set_level(logging.WARNING, "mpcbandit.data")
    _source(cfg, "feature_holder.1", data)
    [warning] = [r.getMessage() for r in caplog.records]
    assert "notes.txt is not read by feature_holder.1" in warning
    assert "no party of this protocol reads it" in warning


@pytest.mark.parametrize("party", ["feature_holder.0", "environment.0", "reward_holder.0"])
def test_a_folder_holding_what_its_role_reads_says_nothing(hannun, caplog, party):
    cfg, data = hannun
    caplog.set_level(logging.WARNING, "mpcbandit.data")
    _source(cfg, party, data)
    assert caplog.records == []
