"""The dealer never hands out the same material twice, and ops fail clearly when material
runs out, does not match, or no dealer is configured."""

import numpy as np
import pytest

from dealer.material import expand_shares, make_batch
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.local import computing_names, run_engines
from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.provider import MaterialError
from mpcbandit.net.inproc import run_inproc


def test_triples_are_correct_and_never_repeat():
    def fn(eng):
        # three takes spanning several dealer batches (small batches force refills)
        return [eng.material.take("mul", (), k) for k in (5000, 20000, 7000)]

    res, chans = run_engines(fn, 3, batch_elements=3 * 4096)
    a = b = c = None
    for p in computing_names(3):
        takes = res[p]
        pa = np.concatenate([t["a"] for t in takes])
        pb = np.concatenate([t["b"] for t in takes])
        pc = np.concatenate([t["c"] for t in takes])
        a, b, c = (pa, pb, pc) if a is None else (a + pa, b + pb, c + pc)
    assert np.array_equal(c, a * b)
    assert np.unique(a).size == a.size and np.unique(b).size == b.size
    assert chans["compute.2"].stats.op("dealer").rounds > 6   # several batches were served


def test_seeds_and_batches_are_fresh():
    prg = Prg()
    s1, c1 = make_batch("mul", (), 100, 3, prg)
    s2, c2 = make_batch("mul", (), 100, 3, prg)
    assert len(set(s1 + s2)) == 6
    assert not np.array_equal(c1[0], c2[0])


def test_the_dealer_spreads_corrections_over_the_computing_parties():
    def fn(eng):
        for k in range(40):               # batches of different sizes, two kinds
            eng.material.take("mul", (), 500 + 97 * k)
            eng.material.take("matmul", ((3, 4), (4, 2)), 1 + 13 * k)
        return None

    res, chans = run_engines(fn, 3, batch_elements=4096)
    got = [chans[p].stats.op("dealer").bytes_received for p in computing_names(3)]
    assert min(got) > 0.8 * max(got), got     # the last party alone would get them all


def test_one_party_only_gets_corrections_for_derived_components():
    seeds, corr = make_batch("mul", (), 10, 2, Prg())
    assert len(corr) == 1 and corr[0].shape == (10,)          # c only: one element per triple
    with pytest.raises(ValueError, match=r"correction is uint64 of shape \(10,\), expected "
                                         r"uint64 of shape \(11,\)"):
        expand_shares("mul", (), 11, seeds[1], corrected=True, corrections=corr)


def test_narrow_components_arrive_as_32_bits_and_are_right_modulo_2_to_the_32():
    seeds, corr = make_batch("multrunc", ((3,), (2, 3)), 4, 2, Prg(), corrected=1)
    assert [c.dtype for c in corr] == [np.uint64] + [np.uint32] * 4   # c, then a·α, a·β, ...
    mine, theirs = (expand_shares("multrunc", ((3,), (2, 3)), 4, seeds[i], corrected=i == 1,
                                  corrections=corr if i == 1 else None) for i in (0, 1))
    total = {k: mine[k] + theirs[k] for k in mine}
    alpha, beta = mine["al"], theirs["be"]                   # each party's own mask bits
    assert set(np.unique(alpha)) <= {0, 1} and set(np.unique(beta)) <= {0, 1}
    assert np.array_equal(total["c"], total["a"][:, None, :] * total["b"])   # exact mod 2^64
    low = np.uint64(2 ** 32 - 1)
    for name, want in (("a_al", total["a"][:, None, :] * alpha),
                       ("a_be", total["a"][:, None, :] * beta), ("al_be", alpha * beta),
                       ("a_al_be", total["a"][:, None, :] * alpha * beta)):
        assert np.array_equal(total[name] & low, want & low), name
    with pytest.raises(ValueError, match=r"multrunc.a_al: correction is uint64"):
        expand_shares("multrunc", ((3,), (2, 3)), 4, seeds[1], corrected=True,
                      corrections=[corr[0], corr[1].astype(np.uint64), *corr[2:]])


def test_exhausted_material_is_a_clear_error():
    def fn(eng):
        x = eng.input(np.ones(100) if eng.lead else None, "compute.0")
        for _ in range(20):
            x = eng.mul(x, x)

    with pytest.raises(MaterialError, match="exhausted"):
        run_engines(fn, 2, dealer_kw={"max_elements": 2000}, batch_elements=300)


def test_mismatched_requests_are_a_clear_error():
    def fn(eng):
        x = eng.input(np.ones(10) if eng.lead else None, "compute.0")
        return eng.square(x) if eng.lead else eng.mul(x, x)

    with pytest.raises(MaterialError, match="mismatch"):
        run_engines(fn, 2)


def test_engine_without_dealer_refuses_ops_needing_material():
    parties = computing_names(2)

    def fn(chan):
        eng = Engine(chan, parties, dealer=None)
        return eng.mul(eng.public([1.0]), eng.public([2.0]))

    with pytest.raises(MaterialError, match="no dealer"):
        run_inproc({p: fn for p in parties})
