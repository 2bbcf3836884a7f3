"""The engine's range assumptions are real, and every place where breaking one would corrupt
a result silently refuses instead: the argmax's score range (checked against the worst score a
Hannun run can reach), integer shares, Hannun's rewards and context norms."""

import numpy as np
import pytest

from mpcbandit.bandits.egreedy import exploration_key, run_eps_greedy
from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError, DataError, ProtocolError
from mpcbandit.mpc import compare
from mpcbandit.mpc.fixed import FixedPointRangeError, encode
from mpcbandit.mpc.local import run_engines
from mpcbandit.data import hannun_data
from mpcbandit.protocols.hannun import protocol as hannun
from mpcbandit.protocols.hannun.stream import exploration
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

L, ARMS = 20, 10
CONFIG = "configs/hannun-synthetic.toml"


def _lex_argmax(values):
    def fn(eng):
        x = eng.input(values if eng.lead else None, "compute.0")
        return eng.open(eng.argmax(x, "lex"))
    return run_engines(fn, 2, frac_bits=L)[0]["compute.0"]


@pytest.mark.parametrize("scale, right", [(0.9, True), (1.5, False)])
def test_lex_argmax_is_right_below_its_limit_and_wrong_above(scale, right):
    limit = compare.lex_limit(L, ARMS)
    values = np.linspace(-0.9, 0.5, ARMS) * limit
    values[3] = scale * limit  # the largest, by far
    got = _lex_argmax(values)
    assert np.array_equal(got, np.eye(ARMS)[3]) == right


def test_shares_of_integers_refuse_a_fraction_instead_of_rounding():
    assert encode(np.array([0.0, 1.0, -3.0]), 0).view(np.int64).tolist() == [0, 1, -3]
    with pytest.raises(FixedPointRangeError, match="0.5 is not an integer"):
        encode(np.array([1.0, 0.5]), 0)


def test_hannun_refuses_a_precision_whose_scores_could_pass_the_argmax_range():
    with pytest.raises(ConfigError) as e:
        load_config(CONFIG, ["hannun.precision_bits=26", "hannun.iterations=60000"])
    assert e.value.key == "hannun.precision_bits" and "use precision_bits <= 25" in str(e.value)
    load_config(CONFIG, ["hannun.precision_bits=25", "hannun.iterations=60000"])
    # the bound is a bound: the float64 reference's scores stay below it
    cfg = load_config(CONFIG, ["hannun.iterations=2000"])
    data, steps = hannun.task(cfg), range(1, 2000, 7)
    run = run_eps_greedy(data.contexts, data.rewards, exploration(cfg, exploration_key(cfg.seed)),
                         checkpoints=tuple(steps))
    worst = max(float(np.abs(np.einsum("ad,ade,e->a", b, w_inv, data.contexts[t])).max())
                for t, (w_inv, b) in run.checkpoints.items())
    assert 0 < worst < hannun.score_bound(2000, 0.0)


def _run_with_task(monkeypatch, contexts=None, rewards=None):
    real = hannun_data.task  # what the roles' built-in sources read

    def patched(cfg):
        data = real(cfg)
        return type(data)(data.contexts if contexts is None else contexts(data.contexts),
                          data.rewards if rewards is None else rewards(data.rewards), data.expected)
    monkeypatch.setattr(hannun_data, "task", patched)
    cfg = load_config(CONFIG, ["hannun.iterations=4", "hannun.arms=4", "hannun.dims=6"])
    return run_protocol_inproc(cfg)


def test_reward_holder_refuses_a_reward_it_would_share_rounded(monkeypatch):
    with pytest.raises(ProtocolError) as e:
        _run_with_task(monkeypatch, rewards=lambda r: r + 0.5)
    assert e.value.peer == "environment.0" and e.value.tag.startswith("deliver#")
    assert "0 or 1" in str(e.value)


def test_feature_holder_refuses_contexts_beyond_unit_norm_before_sharing(monkeypatch):
    with pytest.raises(DataError, match=r"feature_holder\.\d: its features at step 0 have norm"):
        _run_with_task(monkeypatch, contexts=lambda x: x * 3.0)
