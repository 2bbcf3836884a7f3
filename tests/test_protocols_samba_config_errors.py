"""Bad samba configs fail before anything runs, naming the key."""

from __future__ import annotations

import pytest

from mpcbandit.errors import ConfigError
from mpcbandit.config import load_config
from mpcbandit.protocols.samba.protocol import plaintext, run_inproc_samba
from tests.samba_support import SYNTHETIC, samba_config


@pytest.mark.parametrize("overrides, key", [
    ({"algorithm": "greedy-ish"}, "samba.algorithm"),
    ({"budget": 5, "arms": 10}, "samba.budget"),
    ({"data": "samba/data/DoesNotExist.txt"}, "samba.data"),
    ({"epsilon": 1.5}, "samba.epsilon"),
])
def test_bad_samba_config_names_the_key(overrides, key):
    with pytest.raises(ConfigError) as err:
        samba_config(**overrides)
    assert err.value.key == key


def test_small_paillier_keys_are_refused_unless_declared_insecure():
    with pytest.raises(ConfigError) as e:
        load_config(SYNTHETIC, ["samba.paillier_bits=1024"])
    assert e.value.key == "samba.paillier_bits" and "insecure_small_keys" in e.value.reason
    cfg = load_config(SYNTHETIC, ["samba.paillier_bits=1024", "samba.insecure_small_keys=true"])
    assert cfg.section.paillier_bits == 1024


@pytest.mark.parametrize("tau", [1e-9, 1e-4, 1e-3])
def test_softmax_works_for_any_positive_temperature(tau):
    cfg = samba_config(algorithm="softmax", tau=tau, budget=60, arms=4)
    out = run_inproc_samba(cfg)
    assert out["series"]["arms"] == plaintext(cfg)["series"]["arms"]
