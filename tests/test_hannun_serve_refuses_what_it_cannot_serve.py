"""What the batched chains of Hannun's served bandit refuse, each by name: an engine the refresh
cannot run on, a reward Hannun's bound does not cover, a selection that is not one-hot, and
one-hots of the wrong shape."""

from types import SimpleNamespace

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import ConfigError, DataError, ProtocolError
from mpcbandit.mpc import arith
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.rounds import Op
from mpcbandit.protocols.hannun.ops import (
    DECIDE,
    UPDATE,
    initial_state,
    opened_arms,
    share_choices,
    share_rewards,
    update,
)


@pytest.mark.parametrize("trunc,bits,key", [("local", 20, "hannun.trunc"),
                                            ("pair", 20, "hannun.trunc"),
                                            ("exact", 22, "hannun.precision_bits")])
def test_serving_refuses_an_engine_without_exact_truncation_or_with_more_than_20_bits(
        trunc, bits, key):
    with pytest.raises(ConfigError) as err:
        initial_state(SimpleNamespace(trunc=trunc, frac=bits), 3, 4)
    assert err.value.key == key


def test_a_reward_other_than_0_or_1_is_refused_with_its_position():
    with pytest.raises(DataError, match=r"reward_holder.0: reward 0.5 at position 2 .* 0 or 1 "
                                        r"\(2 of 4 are not\)"):
        next(share_rewards(SimpleNamespace(me="reward_holder.0"), [1, 0, 0.5, 3]))


def test_the_arm_puller_refuses_a_selection_that_is_not_one_hot_in_every_row():
    rows = np.array([[0, 1, 0], [1, 1, 0]])

    def computing(eng):
        x = eng.input(rows if eng.lead else None, "compute.0", frac=0)
        eng.run(Op(DECIDE, arith.open_to(eng, x, "arm.0")))

    def puller(eng):
        return eng.run(Op(DECIDE, opened_arms(eng, "compute.0")))

    with pytest.raises(ProtocolError, match="compute.0.*not one-hot in every row"):
        run_engines(computing, 2, others={"arm.0": puller}, deadline_s=deadline(10))


def test_one_hots_of_the_wrong_shape_are_refused_naming_the_arm_puller_and_change_nothing():
    A, D, R = 3, 4, 2

    def computing(eng):
        state = initial_state(eng, A, D)
        before = dict(state)
        xs = eng.input(np.full((R, D), 0.25) if eng.lead else None, "compute.0")
        with pytest.raises(ProtocolError) as err:
            eng.run(Op(UPDATE, update(eng, state, xs, "arm.0", "reward.0")))
        return str(err.value), all(state[k] is before[k] for k in before)

    res, _ = run_engines(computing, 2, trunc="exact", deadline_s=deadline(10), others={
        "arm.0": lambda eng: eng.run(Op(UPDATE, share_choices(eng, [0, 1], A + 1))),
        "reward.0": lambda eng: eng.run(Op(UPDATE, share_rewards(eng, [1, 0])))})
    for party in ("compute.0", "compute.1"):
        message, unchanged = res[party]
        assert "'arm.0'" in message and "one-hots of shape (2, 4), expected (2, 3)" in message
        assert unchanged
