"""Bad configs fail before any process starts, with an error naming the key path."""

import textwrap

import pytest

from mpcbandit.config import load_config, parse_override
from mpcbandit.errors import ConfigError

BASE = """
protocol = "demo"
seed = 3
[run]
deadline_s = 5.0
[network]
host = "127.0.0.1"
base_port = 41000
[demo]
inputs = 2
computing = 2
length = 4
"""


def write(tmp_path, text):
    p = tmp_path / "c.toml"
    p.write_text(textwrap.dedent(text))
    return p


def error_for(tmp_path, text=BASE, overrides=()):
    with pytest.raises(ConfigError) as e:
        load_config(write(tmp_path, text), list(overrides))
    return e.value


def test_valid_config_and_overrides_are_typed(tmp_path):
    cfg = load_config(write(tmp_path, BASE), ["demo.length=9", "run.net=lan", "seed=11"])
    assert cfg.section.length == 9 and cfg.seed == 11 and cfg.net.name == "lan"
    assert cfg.run.deadline_s == 5.0
    assert [p.name for p in cfg.parties()] == ["input.0", "input.1", "compute.0", "compute.1",
                                              "output.0"]
    assert cfg.parties()[2].address == "tcp://127.0.0.1:41002"


@pytest.mark.parametrize("override,key", [
    ("demo.lenght=3", "demo.lenght"),                 # unknown key
    ("run.colour=3", "run.colour"),
    ("extra.x=1", "extra"),                           # unknown section
    ("demo.length=three", "demo.length"),             # wrong type (bare word -> str)
    ("demo.length=2.5", "demo.length"),
    ("demo.length=true", "demo.length"),              # bool is not an int
    ("demo.computing=1", "demo.computing"),           # one computing party: no secrecy
    ("demo.inputs=1", "demo.inputs"),
    ("run.deadline_s=0", "run.deadline_s"),
    ("run.security=plain", "run.security"),
    ("run.net=fast", "run.net"),
    ("run.net={one_way_ms=-1}", "run.net.one_way_ms"),
    ("run.net={mbit_s=10}", "run.net.one_way_ms"),
    ("network.base_port=70000", "network.base_port"),  # port out of range
    ("network.base_port=65533", "network.base_port"),  # runs past 65535 with 5 parties
    ("network.addresses={\"input.0\" = \"tcp://127.0.0.1:41001\"}", "network.addresses.input.0"),
    ("network.addresses={\"nobody.0\" = \"tcp://127.0.0.1:1\"}", "network.addresses.nobody.0"),
    ("network.addresses={\"input.0\" = \"udp://x:1\"}", "network.addresses.input.0"),
    ("protocol=chess", "protocol"),
    ("seed=-1", "seed"),
])
def test_bad_values_name_their_key(tmp_path, override, key):
    err = error_for(tmp_path, overrides=[override])
    assert err.key == key
    assert key in str(err)


def test_duplicate_address_names_both_parties(tmp_path):
    err = error_for(tmp_path, overrides=[
        'network.addresses={"input.0" = "tcp://h:5000", "output.0" = "tcp://h:5000"}'])
    assert "duplicate address" in str(err) and "input.0" in str(err) and "output.0" in str(err)


def test_missing_protocol_and_missing_required_key(tmp_path):
    assert error_for(tmp_path, text="seed = 1\n").key == "protocol"


def test_missing_file_and_broken_toml(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.toml")
    assert "not valid TOML" in str(error_for(tmp_path, text="protocol = \n"))


def test_override_syntax():
    assert parse_override("a.b=[20,20]") == ("a.b", [20, 20])
    assert parse_override("samba.algorithm=ucb") == ("samba.algorithm", "ucb")
    assert parse_override("x.y = 1.5") == ("x.y", 1.5)
    with pytest.raises(ConfigError):
        parse_override("novalue")
    with pytest.raises(ConfigError):
        parse_override("a..b=1")


def test_setting_into_a_value_is_an_error(tmp_path):
    assert error_for(tmp_path, overrides=["seed.x=1"]).key == "seed"


@pytest.mark.parametrize("override,key,words", [
    ('network.host=""', "network.host", "empty host"),
    ('network.host="127.0.0.1:99"', "network.host", "has a port"),
    ('network.host="::1"', "network.host", "IPv6"),
    ('network.addresses={"input.0" = "tcp://[::1]:7000"}', "network.addresses.input.0", "IPv6"),
])
def test_hosts_that_cannot_work_are_named(tmp_path, override, key, words):
    e = error_for(tmp_path, overrides=[override])
    assert e.key == key and words in e.reason
