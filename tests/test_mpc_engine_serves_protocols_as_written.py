"""The engine features a protocol needs written as the paper reads: flat merged messages (a
party runs its one op whatever nesting the senders merged it into), argmax with the caller's
tie-break permutation, exact products without truncation, the reciprocal's linear start."""

import numpy as np
import pytest

from deadlines import deadline
from mpcbandit.errors import ProtocolError
from mpcbandit.mpc.fixed import decode, encode
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.rounds import Round, gather, run_ops
from mpcbandit.net.inproc import run_inproc

L = 20


def _send(peer, body):
    yield Round({peer: body}, ())


def _recv(peer):
    got = yield Round({}, (peer,))
    return got[peer]


def test_one_op_reads_a_message_merged_from_nested_gathers():
    def sender(chan):
        inner = gather([_send("reader", "a"), gather([_send("reader", "b")])])
        run_ops(chan, "t", [inner, _send("reader", "c")])

    def reader(chan):
        return run_ops(chan, "t", [_recv("sender"), gather([_recv("sender"), _recv("sender")])])

    results, chans = run_inproc({"sender": sender, "reader": reader}, deadline_s=deadline(5))
    assert results["reader"] == ["a", ["b", "c"]]
    assert chans["reader"].stats.op("t").rounds == 1


def test_a_reader_expecting_more_bodies_than_sent_names_the_sender():
    def sender(chan):
        run_ops(chan, "t", [gather([_send("reader", 1)])])

    def reader(chan):
        run_ops(chan, "t", [_recv("sender"), _recv("sender")])

    with pytest.raises(ProtocolError, match="sender.*fewer parts"):
        run_inproc({"sender": sender, "reader": reader}, deadline_s=deadline(5))


@pytest.mark.parametrize("n", [2, 3])
def test_argmax_breaks_ties_by_the_callers_permutation(n):
    scores = np.array([1.0, 3.0, 3.0, 0.5, 3.0, 2.0])
    perms = [np.array(p) for p in ([1, 2, 3, 4, 5, 6], [1, 6, 3, 4, 5, 2], [6, 2, 3, 4, 5, 1],
                                   [2, 1, 6, 3, 4, 5])]

    def fn(eng):
        x = eng.input(scores if eng.lead else None, "compute.0")
        out = []
        for p in perms:
            g = eng.input(p if eng.lead else None, "compute.0", frac=0)
            out.append(eng.open(eng.argmax(x, "lex", permutation=g)))
        return out

    got = run_engines(fn, n)[0]["compute.0"]
    tied = np.flatnonzero(scores == scores.max())
    for p, onehot in zip(perms, got):
        assert onehot.tolist() == np.eye(len(scores))[tied[np.argmax(p[tied])]].tolist()


def test_a_permutation_of_the_wrong_shape_is_refused():
    def fn(eng):
        x = eng.input(np.zeros(4) if eng.lead else None, "compute.0")
        g = eng.input(np.arange(1, 4) if eng.lead else None, "compute.0", frac=0)
        eng.argmax(x, "lex", permutation=g)

    with pytest.raises(ValueError, match="permutation of shape"):
        run_engines(fn, 2)


@pytest.mark.parametrize("n,trunc", [(2, "local"), (3, "paper")])
def test_a_product_without_rescale_is_exact_at_twice_the_bits_in_one_round(n, trunc):
    rng = np.random.default_rng(3)
    x = decode(encode(rng.uniform(-4, 4, 200), L), L)
    y = decode(encode(rng.uniform(-4, 4, 200), L), L)

    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        b = eng.input(y if eng.lead else None, "compute.0")
        before = eng.chan.stats.op("mul").rounds
        p = eng.mul(a, b, rescale=False)
        return p.frac, eng.chan.stats.op("mul").rounds - before, eng.open(p)

    frac, rounds, value = run_engines(fn, n, trunc=trunc)[0]["compute.0"]
    assert frac == 2 * L and rounds == 1
    assert np.array_equal(value, x * y)          # exact: x y has at most 2L fractional bits


@pytest.mark.parametrize("n", [2, 3])   # local truncation; fused pair truncation
def test_the_linear_start_reciprocal_is_accurate_on_one_to_two_with_eight_rounds_fewer(n):
    d = np.linspace(1.0, 2.0, 101)

    def fn(eng):
        x = eng.input(d if eng.lead else None, "compute.0")
        counts, errors = [], []
        for start, iterations in (("exp", 7), ("linear", 7), ("linear", 3)):
            before = eng.chan.stats.op("reciprocal").rounds
            q = eng.reciprocal(x, iterations, domain=(1.0, 2.0), start=start)
            counts.append(eng.chan.stats.op("reciprocal").rounds - before)
            errors.append(np.max(np.abs(eng.open(q) * d - 1)))
        return counts, errors

    (exp7, linear7, linear3), errors = run_engines(fn, n)[0]["compute.0"]
    assert max(errors) < 1e-5                    # 3 steps suffice from the line: |e_0| <= 1/17
    assert exp7 - linear7 == 8 and linear7 - linear3 == 4


def test_the_linear_start_refuses_a_range_beyond_one_to_two():
    def fn(eng):
        x = eng.input(np.ones(3) if eng.lead else None, "compute.0")
        eng.reciprocal(x, domain=(1.0, 4.0), start="linear")

    with pytest.raises(ValueError, match="linear"):
        run_engines(fn, 2)
