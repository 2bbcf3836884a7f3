"""O3M's service takes only values its model can hold: a context value or a reward beyond
o3m.max_value is a 400 naming the field (one slice of 1e300 or one reward of 1e308 made the
AP's model overflow to NaN, its op log refuse the record, and the service stop for good)."""

import pytest

from mpcbandit.config import load_config
from mpcbandit.protocols.o3m.protocol import AP
from mpcbandit.protocols.o3m.serve import service_role
from mpcbandit.shipped_configs import config_path
from serve_support import FakeBackend, LiveService


@pytest.fixture
def ap(tmp_path):
    cfg = load_config(config_path("o3m-synthetic"), ["o3m.max_value=1000.0"])
    role = service_role(cfg, AP, 0)
    live = LiveService(tmp_path / "ap.wal", role=role, backend=FakeBackend())
    yield live, role.features
    live.close()


@pytest.mark.parametrize("value", [1e300, -1e300, 1000.5])
def test_a_context_value_beyond_max_value_is_400_naming_it(ap, value):
    live, width = ap
    features = [0.0] * width
    features[3] = value
    status, body, _ = live.call("POST", "/v1/contexts", {"id": "c1", "features": features})
    assert status == 400 and body["field"] == "features[3]", body
    assert "1000" in body["error"]
    assert not live.service.records  # nothing logged that the model could not apply


@pytest.mark.parametrize("reward", [1e308, -1001.0])
def test_a_reward_beyond_max_value_is_400_naming_it(ap, reward):
    live, _ = ap
    status, body, _ = live.call("POST", "/v1/rewards", {"id": "d1", "reward": reward})
    assert status == 400 and body["field"] == "reward", body
    assert "1000" in body["error"]


def test_values_within_max_value_are_taken(ap):
    live, width = ap
    status, _, _ = live.call("POST", "/v1/contexts",
                             {"id": "c2", "features": [1000.0] + [-1000.0] * (width - 1)})
    assert status == 202
