"""Every config shipped in configs/ that a user runs as it is keeps the protocol's privacy
promise (no privacy warning); the papers' reproduction settings live only in configs whose name
says so (`*-paper.toml`), so `mpcbandit run configs/X.toml` never runs a reproduction mode by
surprise."""

import re
import tomllib

import pytest

from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError
from mpcbandit.protocols import privacy_record
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol

CONFIGS = sorted((REPO / "configs").glob("*.toml"))
REPRODUCTION = re.compile(r"paper|reproduc", re.IGNORECASE)


def run_configs():
    """The configs `mpcbandit run` takes (the frontier's name no protocol: `mpcbandit frontier`)."""
    return [p for p in CONFIGS if "protocol" in tomllib.loads(p.read_text())]


def test_every_config_without_a_protocol_is_a_frontier_config():
    assert {p.name for p in CONFIGS} - {p.name for p in run_configs()} == {
        "frontier.toml", "frontier-mnist.toml"}


@pytest.mark.parametrize("path", [p for p in run_configs() if not REPRODUCTION.search(p.name)],
                         ids=lambda p: p.name)
def test_a_shipped_config_not_named_for_reproduction_is_private(path):
    try:
        cfg = load_config(path)
    except ConfigError as e:  # a real data set absent here: its config cannot be read
        if "not found" not in e.reason:
            raise
        pytest.skip(f"{path.name}: {e}")
    record = privacy_record(cfg)
    assert record["private"], f"{path.name} is not private: {record['warnings']}"


def test_each_reproduction_config_says_it_is_not_private():
    named = [p for p in run_configs() if REPRODUCTION.search(p.name)]
    assert named, "the papers' reproduction settings have a config named for them"
    for path in named:
        assert not privacy_record(load_config(path))["private"], path.name


@pytest.mark.parametrize("name", sorted(PROTOCOL_MODULES))
def test_a_config_that_leaves_a_protocols_keys_at_their_defaults_is_private(name):
    proto = get_protocol(name)
    warnings = proto.privacy_warnings(proto.section()) if proto.privacy_warnings else []
    assert warnings == [], warnings
