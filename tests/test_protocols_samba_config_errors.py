"""Bad samba configs fail before anything runs, naming the key."""

from __future__ import annotations

import pytest

from mpcbandit.errors import ConfigError
from tests.samba_support import samba_config


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
