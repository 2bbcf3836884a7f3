"""The run identity covers what parties must agree on and never a host's local paths."""

from pathlib import Path

from mpcbandit.config import load_config
from mpcbandit.identity import config_digest, differing_keys, identity_fields

CFG = Path(__file__).resolve().parent.parent / "configs" / "hannun-synthetic.toml"


def test_local_paths_leave_the_digest_unchanged():
    base = load_config(CFG, [])
    moved = load_config(CFG, ['run.keys_dir="/elsewhere/keys"', 'hannun.data_dir="/data/mnist"',
                              'run.deadline_s=5.0'])
    assert config_digest(base) == config_digest(moved)


def test_protocol_seed_and_security_change_the_digest_and_are_named():
    base = load_config(CFG, [])
    flipped = "none" if base.run.security == "curve" else "curve"
    for override, key in [("seed=99", "seed"), ("hannun.arms=7", "hannun.arms"),
                          (f'run.security="{flipped}"', "run.security"),
                          ("network.base_port=7000", "parties.dealer.0")]:
        other = load_config(CFG, [override])
        assert config_digest(other) != config_digest(base), override
        assert key in differing_keys(identity_fields(base), identity_fields(other)), override
