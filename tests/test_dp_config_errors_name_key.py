import pytest

from dp_helpers import config
from mpcbandit.errors import ConfigError


@pytest.mark.parametrize("protocol,section,key", [
    ("jdp", {"epsilon": 0.0}, "jdp.epsilon"),
    ("jdp", {"delta": 1.0}, "jdp.delta"),
    ("jdp", {"noise": "laplace"}, "jdp.noise"),
    ("jdp", {"alpha": 0}, "jdp.alpha"),
    ("jdp", {"dims": 0}, "jdp.dims"),
    ("jdp", {"epsilon": 1e6, "noise": "wishart", "horizon": 1}, "jdp.noise"),
    ("feducb", {"lam": -1.0, "noise": "none"}, "feducb.lam"),
    ("feducb", {"schedule": "sometimes"}, "feducb.schedule"),
    ("feducb", {"mode": "p2p", "graph": "ring", "agents": 4, "gamma": 3}, "feducb.gamma"),
    ("feducb", {"mode": "p2p", "graph": "torus"}, "feducb.graph"),
    ("feducb", {"agents": 1}, "feducb.agents"),
    ("feducb", {"colour": "red"}, "feducb.colour"),
])
def test_config_errors_name_the_key(protocol, section, key):
    with pytest.raises(ConfigError) as err:
        config(protocol, **section)
    assert key in str(err.value)
