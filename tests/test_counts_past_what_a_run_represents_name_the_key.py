"""A count no run can represent (10**20 iterations passed `check`, printed a 77-trillion-hour
estimate, then every party died with OverflowError in the hello) is a ConfigError naming the
key: every integer setting of every protocol section and of [run]/[network] has a maximum,
its spec's own or INT_MAX (2**53), list items included."""

import dataclasses
import typing

import pytest

from mpcbandit.config import INT_MAX, NetworkSection, RunSection, ServeSection, load_config
from mpcbandit.errors import ConfigError
from mpcbandit.registry import PROTOCOL_MODULES, get_protocol

CONFIGS = {"demo": "demo-sum.toml", "hannun": "hannun-synthetic.toml",
           "samba": "samba-synthetic.toml", "o3m": "o3m-synthetic.toml",
           "feducb": "feducb-synthetic.toml", "jdp": "jdp-synthetic.toml",
           "mpcops": "mpc-ops.toml"}
HUGE = 10**20


def int_keys(cls, path):
    """(key, is a list) of every integer setting of a section, nested sections flattened."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp, key = hints[f.name], f"{path}.{f.metadata.get('key', f.name)}"
        if dataclasses.is_dataclass(tp):
            yield from int_keys(tp, key)
        elif tp is int or tp == list[int]:
            yield key, tp != int


def every_int_key():
    for name in sorted(PROTOCOL_MODULES):
        config = CONFIGS[name]
        yield from ((config, key, listed) for key, listed in int_keys(get_protocol(name).section, name))
        yield from ((config, key, listed) for section, cls in (("run", RunSection),
                                                               ("network", NetworkSection),
                                                               ("serve", ServeSection))
                    for key, listed in int_keys(cls, section))


def test_every_protocol_has_a_config_here():
    assert set(CONFIGS) == set(PROTOCOL_MODULES)


@pytest.mark.parametrize("protocol", sorted(p for p in CONFIGS if get_protocol(p).steps))
def test_a_step_count_past_its_maximum_names_the_key(protocol):
    cfg = load_config(f"configs/{CONFIGS[protocol]}")
    key, _ = get_protocol(protocol).steps(cfg.section)
    with pytest.raises(ConfigError) as e:
        load_config(f"configs/{CONFIGS[protocol]}", [f"{protocol}.{key}={HUGE}"])
    assert e.value.key == f"{protocol}.{key}" and "above the maximum" in e.value.reason


@pytest.mark.parametrize("config,key,listed", list(every_int_key()))
def test_every_integer_setting_has_a_maximum_a_run_can_represent(config, key, listed):
    value = f"[{HUGE}]" if listed else str(HUGE)
    with pytest.raises(ConfigError) as e:
        load_config(f"configs/{config}", [f"{key}={value}"])
    assert e.value.key == (f"{key}[0]" if listed else key), e.value


def test_the_default_maximum_is_exact_as_a_float_and_within_int64():
    assert int(float(INT_MAX)) == INT_MAX and INT_MAX < 2**63
    with pytest.raises(ConfigError, match="beyond 2\\*\\*53"):
        load_config("configs/hannun-synthetic.toml", [f"hannun.reinvert_every={INT_MAX + 1}"])
    assert load_config("configs/hannun-synthetic.toml",
                       [f"hannun.reinvert_every={INT_MAX}"]).section.reinvert_every == INT_MAX


def test_check_refuses_10_to_the_20_iterations_before_any_estimate(cli):
    done = cli("check", "configs/demo-sum.toml", "--set", f"demo.iterations={HUGE}", check=False)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"config key 'demo.iterations': {HUGE} is above the maximum" in done.stderr
