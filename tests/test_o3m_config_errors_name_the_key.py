"""Bad [o3m] values fail before any process starts, naming the key."""

import pytest

from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError

CONFIG = "configs/o3m-synthetic.toml"


@pytest.mark.parametrize("sets, key, words", [
    (["o3m.partition=[20, 20, 20]"], "o3m.partition", "3 entries"),
    (["o3m.participants=2", "o3m.partition=[5, 0]"], "o3m.partition[1]", ">= 1"),
    (["o3m.lambda=0"], "o3m.lambda", "> 0"),
    (["o3m.algorithm=eps"], "o3m.algorithm", "linucb"),
    (["o3m.participants=1", "o3m.partition=[4]"], "o3m.participants", "minimum"),
    (["o3m.partial_features=101"], "o3m.partial_features", "d = 100"),
    (["o3m.data=criteo"], "o3m.partition", "39"),
    (["o3m.lamda=1"], "o3m.lamda", "unknown key"),
    (["o3m.partition=[20, 20, 20, 20, 'x']"], "o3m.partition[4]", "int"),
])
def test_config_error_names_key(sets, key, words):
    with pytest.raises(ConfigError) as e:
        load_config(CONFIG, sets)
    assert e.value.key == key
    assert words in str(e.value)


def test_lambda_key_is_read():
    assert load_config(CONFIG, ["o3m.lambda=2.5"]).section.lam == 2.5


def test_criteo_iterations_beyond_log_name_the_key(tmp_path):
    from mpcbandit.data.criteo import default_path
    from mpcbandit.protocols.o3m.protocol import plaintext_run
    if not default_path().is_file():
        pytest.skip("shared Criteo sample absent")
    cfg = load_config("configs/o3m-criteo.toml", ["o3m.iterations=5000"])
    with pytest.raises(ConfigError) as e:
        plaintext_run(cfg)
    assert e.value.key == "o3m.iterations"
    missing = load_config("configs/o3m-criteo.toml", [f"o3m.data_path={tmp_path / 'nope.csv'}"])
    with pytest.raises(ConfigError) as e:
        plaintext_run(missing)
    assert e.value.key == "o3m.data_path"
