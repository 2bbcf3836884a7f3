"""The [serve] table of a config is read, checked and explained like [run] and [network]:
anything wrong names its key."""

import pytest

from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError

CONFIG = "configs/hannun-synthetic.toml"


def test_serve_settings_are_read_with_their_defaults_filled_in():
    cfg = load_config(CONFIG, ["serve.batch_ms=2.5", "serve.max_batch=128"])
    assert (cfg.serve.batch_ms, cfg.serve.max_batch, cfg.serve.bind) == (2.5, 128, "127.0.0.1")
    assert cfg.resolved()["serve"]["decision_timeout_s"] == cfg.serve.decision_timeout_s


@pytest.mark.parametrize("item,key,words", [
    ("serve.max_batch=0", "serve.max_batch", "below the minimum"),
    ("serve.batch_ms=-1", "serve.batch_ms", "below the minimum"),
    ("serve.queue_limit=0", "serve.queue_limit", "below the minimum"),
    ("serve.port=70000", "serve.port", "above the maximum"),
    ("serve.bind='10.0.0.1:8080'", "serve.bind", "has a port"),
    ("serve.batch='5'", "serve.batch", "unknown key"),
])
def test_a_wrong_serve_setting_names_its_key(item, key, words):
    with pytest.raises(ConfigError) as e:
        load_config(CONFIG, [item])
    assert e.value.key == key and words in e.value.reason


def test_explain_shows_every_serve_key(cli):
    out = cli("explain", "hannun").stdout
    for key in ("bind", "port", "token_file", "batch_ms", "max_batch", "decision_timeout_s",
                "reward_timeout_s", "checkpoint_every", "queue_limit"):
        assert f"  serve.{key} (" in out, key
