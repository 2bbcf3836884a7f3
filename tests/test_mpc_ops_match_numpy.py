"""Every op against numpy on random inputs, 2, 3 and 5 computing parties, in-process."""

import numpy as np
import pytest

from mpcbandit.mpc import arith
from mpcbandit.mpc.fixed import decode, encode
from mpcbandit.mpc.local import run_engines
from mpcbandit.mpc.rounds import Op
from mpcbandit.mpc.triangle import outer_upper

L = 20
ULP = 2.0 ** -L


def product_bound(k, mx, my, n):
    """Documented bound: k·(|x|+|y|)·2^-(L+1) from encoding plus n·2^-L from truncation."""
    return (k * (mx + my) / 2 + n) * ULP


@pytest.mark.parametrize("n,trunc", [(2, "auto"), (3, "auto"), (5, "auto"), (2, "paper"),
                                     (3, "exact"), (2, "pair")])
def test_arithmetic_ops_match_numpy(n, trunc):
    rng = np.random.default_rng(n)
    X = rng.normal(0, 3, (4, 6))
    Y = rng.normal(0, 3, (6, 5))
    v = rng.normal(0, 3, 6)
    B = rng.normal(0, 2, (3, 4, 6))

    def fn(eng):
        x = eng.input(X if eng.lead else None, "compute.0")
        y = eng.input(Y if eng.index == n - 1 else None, f"compute.{n - 1}")
        w = eng.input(v if eng.lead else None, "compute.0")
        b = eng.input(B if eng.lead else None, "compute.0")
        return {
            "lin": eng.open(2 * x - x * 3 + 1.25),
            "mul": eng.open(eng.mul(x, x)),
            "bcast": eng.open(eng.mul(x, w)),
            "square": eng.open(eng.square(x)),
            "matmul": eng.open(eng.matmul(x, y)),
            "matvec": eng.open(eng.matmul(x, w)),
            "dot": eng.open(eng.dot(w, w)),
            "batched": eng.open(eng.matmul(b, y)),
            "public": eng.open(eng.mul_public(x, -0.375)),
        }

    res, _ = run_engines(fn, n, trunc=trunc)
    out = res["compute.0"]
    m = 3 * 4
    assert np.allclose(out["lin"], 2 * X - 3 * X + 1.25, atol=4 * ULP)
    assert np.abs(out["mul"] - X * X).max() <= product_bound(1, m, m, n)
    assert np.abs(out["bcast"] - X * v).max() <= product_bound(1, m, m, n)
    assert np.abs(out["square"] - X * X).max() <= product_bound(1, m, m, n)
    assert np.abs(out["matmul"] - X @ Y).max() <= product_bound(6, m, m, n)
    assert np.abs(out["matvec"] - X @ v).max() <= product_bound(6, m, m, n)
    assert np.abs(out["dot"] - v @ v).max() <= product_bound(6, m, m, n)
    assert np.abs(out["batched"] - B @ Y).max() <= product_bound(6, m, m, n)
    assert np.abs(out["public"] - X * -0.375).max() <= product_bound(1, m, 1, n)
    for p in range(1, n):  # every party opened the same values
        assert np.array_equal(res[f"compute.{p}"]["matmul"], out["matmul"])


@pytest.mark.parametrize("n", [2, 3])
def test_symmetric_products_match_numpy_and_their_triples_hold_only_the_triangle(n):
    from mpcbandit.mpc import symmetric
    from mpcbandit.mpc.arith import bilinear
    from mpcbandit.mpc.rounds import Op

    rng = np.random.default_rng(7 + n)
    A, D = 3, 5
    M = rng.normal(0, 2, (A, D, D))
    M = M + np.swapaxes(M, 1, 2)                      # symmetric, as W^-1 is
    v = rng.normal(0, 2, D)
    P, Q = rng.normal(0, 2, (A, D)), rng.normal(0, 2, (A, D))

    def fn(eng):
        m = eng.input(M if eng.lead else None, "compute.0")
        x = eng.input(v if eng.lead else None, "compute.0")
        p = eng.input(P if eng.lead else None, "compute.0")
        q = eng.input(Q if eng.lead else None, "compute.0")
        mv = eng.run(Op("matvec", symmetric.matvec(eng, m, x)))
        pq = eng.run(Op("outer", bilinear(eng, "outer_upper", p, q)))
        xx = eng.run(Op("outer", symmetric.outer_upper(eng, x)))
        return {"matvec": eng.open(mv), "outer": eng.open(pq), "xx": eng.open(xx),
                "mirrored": eng.open(symmetric.mirror(pq, D)), "taken": dict(eng.material.units_taken)}

    res, _ = run_engines(fn, n)
    out = res["compute.0"]
    rows, cols = np.triu_indices(D)
    outer = P[:, rows] * Q[:, cols]
    assert np.abs(out["matvec"] - M @ v).max() <= product_bound(D, 8, 8, n)
    assert np.abs(out["outer"] - outer).max() <= product_bound(1, 8, 8, n)
    assert np.abs(out["xx"] - np.outer(v, v)[rows, cols]).max() <= product_bound(1, 8, 8, n)
    mirrored = out["mirrored"]
    assert np.array_equal(mirrored, np.swapaxes(mirrored, 1, 2))   # exactly symmetric
    # one triple each, none of them a full D x D product
    triples = {k: u for k, u in out["taken"].items() if k[0] in ("symmatvec", "outer_upper", "matmul")}
    assert triples == {("symmatvec", (A, D * (D + 1) // 2), (D,)): 1,
                            ("outer_upper", (A, D), (A, D)): 1,
                            ("outer_upper", (D,), (D,)): 1}


@pytest.mark.parametrize("n", [2, 3, 5])
def test_comparisons_exact_for_gaps_of_four_ulps(n):
    rng = np.random.default_rng(10 + n)
    x = decode(encode(rng.uniform(-1000, 1000, 3000), L), L)
    y = x + rng.choice([-4, 4], x.size) * ULP * rng.integers(1, 3, x.size)
    y[:100] = x[:100]  # ties: x < y false, x >= y true

    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        b = eng.input(y if eng.lead else None, "compute.0")
        return eng.open(eng.lt(a, b)), eng.open(eng.ge(a, b)), eng.open(eng.gt(a, 0.5))

    (lt, ge, gt), = [run_engines(fn, n)[0]["compute.0"]]
    assert np.array_equal(lt, (x < y).astype(float))
    assert np.array_equal(ge, (x >= y).astype(float))
    assert np.array_equal(gt, (x > 0.5).astype(float))


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("method", ["pairwise", "tree", "lex"])
def test_argmax_is_one_hot_of_the_maximum(n, method):
    rng = np.random.default_rng(20 + n)
    X = rng.normal(0, 10, (6, 13))
    X[0] = decode(encode(X[0], L), L)
    X[0, 5] = X[0].max() + 4 * ULP                        # the maximum wins by 4 ulps

    def fn(eng):
        x = eng.input(X if eng.lead else None, "compute.0")
        return eng.open(eng.argmax(x, method))

    got = run_engines(fn, n)[0]["compute.0"]
    assert np.array_equal(got, np.eye(13)[np.argmax(X, axis=1)])


@pytest.mark.parametrize("n", [2, 3, 5])
def test_binary_conversions_round_trip(n):
    rng = np.random.default_rng(30 + n)
    x = rng.integers(-2 ** 40, 2 ** 40, 500)

    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0", frac=0)
        bits = eng.a2b(a)
        words = eng.open_binary(bits)
        b0 = eng.b2a(bits.bit(0))
        lo = eng.and_(bits, eng.a2b(a))
        return words, eng.open(b0), eng.open_binary(lo)

    words, b0, lo = run_engines(fn, n)[0]["compute.0"]
    assert np.array_equal(words.view(np.int64), x)
    assert np.array_equal(b0, (x & 1).astype(float))
    assert np.array_equal(lo.view(np.int64), x)


@pytest.mark.parametrize("n,trunc", [(2, "auto"), (3, "auto"), (5, "auto"), (3, "paper"),
                                     (2, "pair"), (3, "exact")])
def test_reciprocal_and_exp(n, trunc):
    xs = np.linspace(1.0, 10.0, 400)
    es = np.linspace(-8.0, 4.0, 400)

    def fn(eng):
        a = eng.input(xs if eng.lead else None, "compute.0")
        e = eng.input(es if eng.lead else None, "compute.0")
        return (eng.open(eng.reciprocal(a, iterations=9)),
                eng.open(eng.reciprocal(eng.input(xs[:200] / 2 + 0.5 if eng.lead else None,
                                                  "compute.0"))),
                eng.open(eng.exp(e, domain=(-8, 4))))

    r9, r7, ex = run_engines(fn, n, trunc=trunc)[0]["compute.0"]
    assert np.max(np.abs(r9 * xs - 1)) <= 1e-4          # [1, 10], 9 iterations
    assert np.max(np.abs(r7 * (xs[:200] / 2 + 0.5) - 1)) <= 1e-4   # [1, 5.5], 7 iterations
    approx = (1 + es / 256) ** 256                      # the documented approximation of e^x
    # k = 8 squarings amplify each truncation's error (≤ n/2 ulps) up to 2^8-fold
    assert np.all(np.abs(ex - approx) <= n * 2.0 ** (9 - L) * approx + 4 * ULP)
    assert np.max(np.abs(ex / np.exp(es) - 1)) <= 0.13  # the approximation itself: 12% at x=-8


def test_inputs_from_and_outputs_to_non_computing_parties():
    feats = np.array([1.5, -2.0, 0.25])

    def fn(eng):
        x = eng.input(None, "features.0")
        r = eng.input(None, "reward.0")
        eng.open_to(eng.mul(x, r), "arm.0")
        return x.v

    res, chans = run_engines(fn, 3, others={
        "features.0": lambda eng: eng.input(feats, "features.0"),
        "reward.0": lambda eng: eng.input(2.0, "reward.0"),
        "arm.0": lambda eng: eng.open_to(None, "arm.0"),
    })
    assert np.allclose(res["arm.0"], feats * 2.0, atol=1e-5)
    for p in ("compute.0", "compute.1", "compute.2"):  # computing parties never learnt it
        assert chans[p].stats.op("open_to").bytes_received == 0


@pytest.mark.parametrize("n", [2, 3])
def test_outer3_is_the_exact_product_of_three_vectors_in_one_round(n):
    rng = np.random.default_rng(11 + n)
    P = (rng.random(6) < 0.3).astype(float)          # a one-hot-like integer vector
    Q = np.array([1.0, -2.5])                         # 3 fractional bits
    W = rng.normal(0, 1, 7)

    def fn(eng):
        p = eng.input(P if eng.lead else None, "compute.0", 0)
        q = eng.input(Q if eng.index == n - 1 else None, f"compute.{n - 1}", 3)
        w = eng.input(W if eng.lead else None, "compute.0")
        before = eng.chan.stats.op("outer3").rounds
        z = eng.outer3(p, q, w)
        return eng.chan.stats.op("outer3").rounds - before, z.frac, eng.open(z)

    res, _ = run_engines(fn, n)
    rounds, frac, z = res["compute.0"]
    assert rounds == 1 and frac == L + 3
    exact = (decode(encode(P, 0), 0)[:, None, None] * decode(encode(Q, 3), 3)[None, :, None]
             * decode(encode(W, L), L)[None, None, :])
    assert np.array_equal(z, exact)                   # no truncation: exact in the ring


@pytest.mark.parametrize("n", [2, 3])
def test_scaled_outer_upper_is_the_exact_triangle_of_q_u_ut_in_one_round(n):
    rng = np.random.default_rng(5 + n)
    Q, U = rng.uniform(0.5, 1.0, (4, 1)), rng.normal(0, 0.3, (4, 6))

    def fn(eng):
        q = eng.input(Q if eng.lead else None, "compute.0")
        u = eng.input(U if eng.index == n - 1 else None, f"compute.{n - 1}")
        before = eng.chan.stats.op("scaled").rounds
        z = eng.run(Op("scaled", arith.scaled_outer_upper(eng, q, u)))
        return eng.chan.stats.op("scaled").rounds - before, z.frac, eng.open(z)

    rounds, frac, z = run_engines(fn, n)[0]["compute.0"]
    assert rounds == 1 and frac == 3 * L
    q, u = decode(encode(Q, L), L), decode(encode(U, L), L)
    assert np.abs(z - q * outer_upper(u, u)).max() < 2.0 ** -50   # no truncation: exact
