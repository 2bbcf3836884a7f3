"""The round scheduler (mpcbandit/mpc/schedule.py): ops join the computing parties' merged
rounds at any round and still compute exactly; a party outside them runs its parts of several
ops at once; parties that do not start the same ops are named."""

import time

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc import arith
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.opening import open_values, swap_bits
from mpcbandit.mpc.schedule import EdgeOp, RoundScheduler
from mpcbandit.net.netspec import NetSpec

CORE = ["compute.0", "compute.1"]


def _chain(eng, x, times: int):
    """x multiplied by itself `times` times, one product (one round) after another."""
    y = x
    for _ in range(times):
        y = yield from arith.bilinear(eng, "mul", y, x)
    return y


def test_ops_started_at_different_rounds_compute_exactly_in_fewer_rounds():
    x = np.array([1.5, -0.75, 1.25])

    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        xs = eng.input(x if eng.lead else None, CORE[0])
        done = {}
        sched.add("a", "t", _chain(eng, xs, 4), lambda v, op: done.__setitem__("a", (v, op.rounds)))
        sched.step()
        sched.add("b", "t", _chain(eng, xs, 3), lambda v, op: done.__setitem__("b", (v, op.rounds)))
        sched.step()
        sched.add("c", "t", _chain(eng, xs, 1), lambda v, op: done.__setitem__("c", (v, op.rounds)))
        while not sched.idle:
            sched.step()
        return ({k: eng.open(v) for k, (v, _) in sorted(done.items())},
                {k: r for k, (_, r) in done.items()}, sched.rounds)

    results, _ = run_engines(core)
    opened, rounds, merged = results[CORE[0]]
    for key, power in (("a", 5), ("b", 4), ("c", 2)):
        assert np.allclose(opened[key], x ** power, atol=1e-4), key
    assert rounds == {"a": 4, "b": 3, "c": 1}
    assert merged == 4   # b ran beside a from its second round, c beside both: 4 rounds, not 8
    assert results[CORE[1]][2] == merged


def test_a_party_outside_the_core_runs_its_parts_of_two_ops_at_once():
    secret = np.array([0.5, 2.0])

    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        xs = eng.input(np.array([3.0, 1.0]) if eng.lead else None, CORE[0])

        def reveal():      # two products, then the result opened to the edge alone
            y = yield from _chain(eng, xs, 2)
            yield from arith.open_to(eng, y, "edge.0")

        def take_input():  # the edge's value, times x
            v = yield from arith.input_value(eng, None, "edge.0", eng.frac)
            return (yield from arith.bilinear(eng, "mul", v, xs))

        got = {}
        sched.add("reveal", "open", reveal())
        sched.step()
        sched.add("input", "in", take_input(), lambda v, op: got.setdefault("v", v))
        while not sched.idle:
            sched.step()
        return eng.open(got["v"])

    def edge(eng):
        opened = EdgeOp(eng.chan, "open", arith.open_to(eng, None, eng.me))
        given = EdgeOp(eng.chan, "in", arith.input_value(eng, secret, eng.me, eng.frac))
        assert given.done          # an input only sends
        while not opened.poll():
            eng.chan.wait_any(opened.waiting_for, 1.0)
        return opened.value

    results, _ = run_engines(core, others={"edge.0": edge})
    assert np.allclose(results["edge.0"], np.array([27.0, 1.0]), atol=1e-3)
    assert np.allclose(results[CORE[0]], secret * np.array([3.0, 1.0]), atol=1e-3)


def test_each_op_counts_the_payload_it_sent_in_merged_rounds_packed_bits_included():
    """What a service's holder reports per op (/metrics' mpcbandit_op_bytes_sent): an op's own
    bodies in the rounds it shared, packed bits at their length (they counted 8 bytes)."""
    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        sent = {}
        sched.add("bits", "t", swap_bits(eng, np.ones(8000, dtype=np.uint64)),
                  lambda v, op: sent.setdefault("bits", op.bytes_sent))
        sched.add("open", "t", open_values(eng, [np.arange(100, dtype=np.uint64)]),
                  lambda v, op: sent.setdefault("open", op.bytes_sent))
        sched.step()
        assert sched.idle and sched.rounds == 1   # both in one merged round
        return sent

    results, _ = run_engines(core)
    assert results[CORE[0]] == results[CORE[1]] == {"bits": 8000 // 8, "open": 100 * 8}


def test_a_party_that_started_an_op_the_other_did_not_is_named():
    x = np.array([1.0])

    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        xs = eng.input(x if eng.lead else None, CORE[0])
        sched.add("a", "t", _chain(eng, xs, 2))
        if eng.lead:
            sched.add("extra", "t", _chain(eng, xs, 2))
        while not sched.idle:
            sched.step()

    with pytest.raises(ProtocolError, match="not running the same ops") as err:
        run_engines(core, deadline_s=deadline(5))
    assert err.value.peer in CORE and "sched round 1" in str(err.value)


def test_a_round_with_no_op_under_way_carries_the_headers_alone():
    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        return sched.step(header=[eng.me])

    results, _ = run_engines(core)
    assert results[CORE[0]] == {CORE[1]: [CORE[1]]}
    assert results[CORE[1]] == {CORE[0]: [CORE[0]]}


def _paced_chain(eng, x, times: int, compute_s: float):
    """_chain with compute_s of computing before each product."""
    y = x
    for _ in range(times):
        time.sleep(compute_s)
        y = yield from arith.bilinear(eng, "mul", y, x)
    return y


def _fit(net, pause_every: int = 10**6, slow_s: float = 0.001):
    """The fit the first core party finds after two ops of ~1 ms a round ran 24 rounds at it
    (slow_s at the other), that party pausing 40 ms before every pause_every-th round (as a
    holder reading p''s ops)."""
    def core(eng):
        sched = RoundScheduler(eng.chan, "sched", CORE, eng.me)
        sched.probe_delay(CORE[0])
        xs = eng.input(np.array([1.0, 0.5]) if eng.lead else None, CORE[0])
        compute_s = 0.001 if eng.lead else slow_s
        sched.add("a", "t", _paced_chain(eng, xs, 24, compute_s))
        sched.add("b", "t", _paced_chain(eng, xs, 24, compute_s))
        while not sched.idle:
            if eng.lead and sched.rounds % pause_every == 0:
                time.sleep(0.04)
            sched.step()
        return sched.fit()

    results, _ = run_engines(core, net=net)
    return results[CORE[0]]


# the fit is a ratio of measured times (the network's delay over an op's computing): on a
# busy machine both are what the scheduler makes them
@pytest.mark.quiet
def test_many_ops_fit_in_a_round_that_waits_on_the_network_even_after_pauses():
    """30 ms one way, ~1 ms of computing per op and round: the rounds wait on the network,
    so many ops fit. A round after a pause finds the other's message there already and waits
    for nothing: the shortest round (a rule before) took that for the network and said 1."""
    fit = _fit(NetSpec("wan", 0.03, None), pause_every=4)
    assert fit is not None and fit >= 6, fit


@pytest.mark.quiet
def test_few_ops_fit_where_computing_fills_the_rounds():
    assert _fit(None) <= 3


@pytest.mark.quiet
def test_a_slower_party_is_not_taken_for_the_network():
    """No delay, the other party computing 6 ms per op and round to this one's 1: this one
    waits ~10 ms a round for it, which is computing, not the network (the median wait, a rule
    before, said 8 fit where one op on more rows is cheaper)."""
    assert _fit(None, slow_s=0.006) <= 2
