"""TOML admits nan and inf; every float setting of every protocol refuses them by key."""

import dataclasses
import typing
from pathlib import Path

import pytest

from mpcbandit.config import RunSection, ServeSection, load_config
from mpcbandit.errors import ConfigError
from mpcbandit.protocols import get_protocol
from mpcbandit.registry import PROTOCOL_MODULES

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def config_for(protocol: str) -> Path:
    """A shipped config of this protocol."""
    for path in sorted(CONFIGS.glob("*.toml")):
        if f'protocol = "{protocol}"' in path.read_text():
            return path
    raise AssertionError(f"no config in {CONFIGS} for protocol {protocol}")


def float_keys(cls, prefix):
    """Dotted keys of every float-typed field of a config dataclass."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if tp is float or tp == (float | None):
            yield f"{prefix}.{f.metadata.get('key', f.name)}"


CASES = [(name, key) for name in sorted(PROTOCOL_MODULES)
         for key in float_keys(get_protocol(name).section, name)]
CASES += [("demo", key) for key in float_keys(RunSection, "run")]
CASES += [("demo", key) for key in float_keys(ServeSection, "serve")]


def test_every_protocol_has_float_settings_under_test():
    assert {name for name, _ in CASES} >= {"feducb", "hannun", "jdp", "o3m", "samba"}
    assert ("demo", "run.startup_s") in CASES and ("demo", "run.deadline_s") in CASES
    assert ("demo", "serve.batch_ms") in CASES and ("demo", "serve.decision_timeout_s") in CASES


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize("protocol,key", CASES)
def test_non_finite_float_is_refused_naming_the_key(protocol, key, value):
    with pytest.raises(ConfigError) as e:
        load_config(config_for(protocol), [f"{key}={value}"])
    assert e.value.key == key
    assert "finite" in e.value.reason


@pytest.mark.parametrize("table,key", [
    ("{one_way_ms = nan}", "run.net.one_way_ms"),
    ("{one_way_ms = 1, mbit_s = nan}", "run.net.mbit_s"),
    ("{one_way_ms = inf}", "run.net.one_way_ms"),
])
def test_non_finite_network_emulation_is_refused(table, key):
    with pytest.raises(ConfigError) as e:
        load_config(config_for("demo"), [f"run.net={table}"])
    assert e.value.key == key and "finite" in e.value.reason


def test_non_utf8_config_is_named(tmp_path):
    bad = tmp_path / "latin1.toml"
    bad.write_bytes('protocol = "demo"\n# caf\xe9\n'.encode("latin-1"))
    with pytest.raises(ConfigError) as e:
        load_config(bad)
    assert e.value.key == str(bad) and "UTF-8" in e.value.reason
