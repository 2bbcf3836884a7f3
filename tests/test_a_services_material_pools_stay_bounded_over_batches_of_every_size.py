"""A service's supply of dealer material (Engine(batch_first_use=False)) holds a bounded
amount however many batch sizes it has served: material is keyed by shape, and a service's
batches take every size from 1 to serve.max_batch. Kinds whose every component carries the
batch axis are pooled by row (one pool serves every size); the pools of the other keys (a
mask shared by a batch's rows, a product summed over the batch) are bounded by dropping the
least recently used. Before, each size kept a pool of its own, refilled ahead, for good: a
feature holder's memory grew with the sizes it had seen (376 MB after 10^5 decisions).

Dropping material is decided by each computing party from the material it took, which is the
same at every party: the parties keep asking the dealer for the same batches and every
product stays exact, evictions or not."""

import numpy as np

from deadlines import deadline
from mpcbandit.mpc import arith, symmetric
from mpcbandit.mpc.fixed import decode
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.opening import open_values
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.triangle import triangle
from mpcbandit.mpc.truncated_product import mul_truncated

A, D = 4, 6
E = D * (D + 1) // 2
SIZES = list(range(1, 65)) * 2 + list(range(64, 0, -3))   # every size, twice, then again
LIMIT = 1 << 16


def _held(supply) -> int:
    """Elements the supply's pools hold: every array kept, whole, until its last unit is used."""
    return sum(a.size for pool in supply._pools.values() for arrays, _, _ in pool
               for a in arrays.values())


def _batch_ops(eng, m, rng_rows, size):
    """The products a service's batch of `size` rows runs: a matrix times every row (its mask
    shared by the rows), a product summed over the rows, the rows' outer products and an
    elementwise product with a truncation in its round."""
    x = eng.input(rng_rows[:size] if eng.lead else None, "compute.0")
    u = yield from symmetric.matvec(eng, m, x, rescale=False)              # (size, A, D)
    ones = eng.public(np.ones((A, size)))
    summed = yield from arith.bilinear(eng, "matmul", ones, x)            # (A, D), over rows
    outer = yield from arith.bilinear(eng, "outer_upper", x, x)           # (size, E)
    scaled = yield from mul_truncated(eng, eng.public(np.full((size, A, D), 0.5)), u,
                                      u.frac - eng.frac)                    # (size, A, D)
    return [summed, outer, scaled]


def _run(batch_first_use: bool, limit: int | None):
    rng = np.random.default_rng(7)
    matrices = rng.normal(0, 0.3, (A, D, D))
    matrices = matrices + np.swapaxes(matrices, 1, 2)
    rows = rng.normal(0, 0.3, (64, D))

    def fn(eng):
        if limit is not None:
            eng.material.pool_limit = limit
        m = eng.input(matrices if eng.lead else None, "compute.0")
        held, opened = [], []
        for size in SIZES:
            out = eng.run(Op("batch", _batch_ops(eng, m, rows, size)))
            held.append(_held(eng.material))
            if size in (1, 37, 64):
                opened.append((size, [_open(eng, z) for z in out]))
        return held, opened

    res, _ = run_engines(fn, 2, trunc="exact", batch_first_use=batch_first_use,
                         deadline_s=deadline(120))
    return res, matrices, rows


def _open(eng, z):
    (v,) = eng.run(Op("open", open_values(eng, [z.v])))
    return decode(v, z.frac)


def _expected(matrices, rows, size):
    x = rows[:size]
    u = np.einsum("aij,bj->bai", matrices, x)
    rows_, cols = triangle(D)
    outer = np.einsum("bi,bj->bij", x, x)[:, rows_, cols]
    return [np.broadcast_to(x.sum(axis=0), (A, D)), outer, 0.5 * u]


def test_a_services_pools_hold_a_bounded_amount_after_batches_of_every_size():
    res, _, _ = _run(batch_first_use=False, limit=None)
    for party in ("compute.0", "compute.1"):
        held, _ = res[party]
        # the default bound (2^21 elements) and the pools of the key taken last; before, the
        # pools grew with every new size, to about 6 * 10^6 elements here
        assert max(held) < (1 << 21) + (1 << 19), max(held)


def test_parties_evicting_material_stay_in_step_and_every_product_stays_exact():
    res, matrices, rows = _run(batch_first_use=False, limit=LIMIT)
    for party in ("compute.0", "compute.1"):
        held, opened = res[party]
        assert max(held) < LIMIT + (1 << 18), max(held)
        assert [size for size, _ in opened] == [1, 37, 64, 1, 37, 64, 64, 37, 1]
        for size, got in opened:
            for g, want in zip(got, _expected(matrices, rows, size)):
                assert np.abs(g - want).max() < 1e-4
