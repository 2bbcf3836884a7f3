"""The ops a batch of decisions runs (mpcbandit serve: B contexts decided in one set of rounds)
take a leading batch dimension: the same rounds as one row, arrays B times larger."""

import numpy as np
import pytest

from mpcbandit.bandits.egreedy import tie_break_argmax
from mpcbandit.mpc import arith, compare, symmetric
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.rounds import Op

L = 20


@pytest.mark.parametrize("rows", [3, 5], ids=["as many rows as matrices", "more rows"])
def test_symmetric_matvec_multiplies_every_matrix_by_every_row_of_a_batch(rows):
    rng = np.random.default_rng(rows)
    A, D = 3, 4
    M = rng.normal(0, 1, (A, D, D))
    M = M + np.swapaxes(M, 1, 2)
    X = rng.normal(0, 1, (rows, D))

    def fn(eng):
        m = eng.input(M if eng.lead else None, "compute.0")
        x = eng.input(X if eng.lead else None, "compute.0")
        before = eng.chan.stats.op("matvec").rounds
        u = eng.run(Op("matvec", symmetric.matvec(eng, m, x)))
        return (eng.open(u), eng.chan.stats.op("matvec").rounds - before,
                dict(eng.material.units_taken))

    got, rounds, taken = run_engines(fn, 2, trunc="exact")[0]["compute.0"]
    want = np.einsum("aij,bj->bai", M, X)      # (B, A, D): every matrix, every row
    assert got.shape == (rows, A, D)
    assert np.abs(got - want).max() <= (D * 8 + 2) * 2.0 ** -L
    assert rounds == 2                          # the product and its truncation, as for one row
    # one triple whose masked matrices are the A triangles, opened once for all the rows
    assert taken[("symmatvec", (A, D * (D + 1) // 2), (rows, 1, D))] == 1


def test_argmax_of_a_batch_breaks_each_rows_ties_by_its_own_permutation_in_one_rows_rounds():
    rng = np.random.default_rng(5)
    A = 10

    def scores(rows):
        s = rng.integers(0, 3, (rows, A)) / 4.0     # few values: ties in every row
        return s, np.argsort(rng.random((rows, A)), axis=1) + 1

    batch, perms = scores(16)
    one, one_perm = batch[:1], perms[:1]

    def fn(eng):
        out = []
        for s, g in ((batch, perms), (one, one_perm)):
            x = eng.input(s if eng.lead else None, "compute.0")
            gamma = eng.input(g if eng.lead else None, "compute.0", frac=0)
            before = eng.chan.stats.op("argmax").rounds
            hot = eng.run(Op("argmax", compare.argmax(eng, x, "lex", permutation=gamma)))
            out.append((eng.open(hot), eng.chan.stats.op("argmax").rounds - before))
        return out

    (hot, rounds), (hot_one, rounds_one) = run_engines(fn, 2, trunc="exact")[0]["compute.0"]
    assert np.array_equal(hot, np.eye(A)[tie_break_argmax(batch, perms)])
    assert np.array_equal(hot_one, np.eye(A)[tie_break_argmax(one, one_perm)])
    assert rounds == rounds_one == 7 + int(np.ceil(np.log2(A - 1)))


def test_a_batch_opened_to_one_party_reaches_it_whole_in_one_round():
    rows = np.eye(6)[[4, 0, 5, 5, 2]]

    def fn(eng):
        x = eng.input(rows if eng.lead else None, "compute.0", frac=0)
        eng.run(Op("pick", arith.open_to(eng, x, "arm.0")))

    def arm(eng):
        return eng.run(Op("pick", arith.open_to(eng, None, "arm.0"))), eng.chan.stats.op("pick").rounds

    got, rounds = run_engines(fn, 2, others={"arm.0": arm})[0]["arm.0"]
    assert np.array_equal(got, rows) and rounds == 1
