"""Round budgets of the paper's Table 1, measured by the transport; and round merging."""

import math

import numpy as np
import pytest

from mpcbandit.mpc.local import run_engines


def rounds_of(n, body, **kw):
    """Rounds counted on compute.0 per label after running body(eng, x, y)."""
    def fn(eng):
        x = eng.input(np.linspace(1, 9, 40) if eng.lead else None, "compute.0")
        y = eng.input(np.linspace(-3, 3, 40) if eng.lead else None, "compute.0")
        before = {k: v.rounds for k, v in eng.chan.stats.by_op.items()}
        body(eng, x, y)
        return {k: v.rounds - before.get(k, 0) for k, v in eng.chan.stats.by_op.items()
                if k != "dealer" and v.rounds - before.get(k, 0)}
    return run_engines(fn, n, **kw)[0]["compute.0"]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_table1_budgets(n):
    assert rounds_of(n, lambda e, x, y: x + y) == {}
    mul = rounds_of(n, lambda e, x, y: e.mul(x, y))["mul"]
    assert mul == (1 if n == 2 else 2)                    # default: local for 2, pair above
    assert rounds_of(n, lambda e, x, y: e.mul(x, y), trunc="paper")["mul"] == 2
    assert rounds_of(n, lambda e, x, y: e.lt(x, y))["lt"] <= 7
    for arms in (2, 3, 10, 17, 100):
        got = rounds_of(n, lambda e, x, y: e.argmax(e.input(
            np.arange(arms) % 7 if e.lead else None, "compute.0")))["argmax"]
        assert got <= 2 * (7 + math.ceil(math.log2(max(arms - 1, 1)))) + 1, arms
        lex = rounds_of(n, lambda e, x, y: e.argmax(e.input(
            np.arange(arms) % 7 if e.lead else None, "compute.0"), "lex"))["argmax"]
        assert lex == 7 + math.ceil(math.log2(max(arms - 1, 1))), arms
    rec = rounds_of(n, lambda e, x, y: e.reciprocal(x))["reciprocal"]
    if n == 2:
        assert rec <= 30
    assert rec == (17 if n == 2 else 18)                  # local / fused pair truncations
    assert rounds_of(n, lambda e, x, y: e.reciprocal(x), trunc="paper")["reciprocal"] == 35
    assert rounds_of(n, lambda e, x, y: e.reciprocal(x), trunc="pair")["reciprocal"] == 18
    assert rounds_of(n, lambda e, x, y: e.exp(y), trunc="pair")["exp"] == 9


def test_exact_truncation_costs_seven_rounds():
    assert rounds_of(3, lambda e, x, y: e.mul(x, y), trunc="exact")["mul"] == 8


def test_two_party_exact_truncation_costs_one_round_and_a_bit_each_way():
    def cost(trunc):
        def fn(eng):
            x = eng.input(np.linspace(1, 9, 800) if eng.lead else None, "compute.0")
            eng.run(eng.op.mul(x, x), label="product")
            return eng.chan.stats.by_op["product"]
        st = run_engines(fn, 2, trunc=trunc)[0]["compute.0"]
        return st.rounds, st.bytes_sent

    (local_rounds, local_bytes), (exact_rounds, exact_bytes) = cost("local"), cost("exact")
    assert exact_rounds == local_rounds + 1
    assert 800 // 8 <= exact_bytes - local_bytes <= 800 // 8 + 64   # packed bits + framing
