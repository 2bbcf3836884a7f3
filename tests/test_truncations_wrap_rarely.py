"""A probabilistic truncation wraps (an error of 2^(64-d)) with probability |x|/2^64 for the
encoded value x it shifts, so the reciprocal and Hannun's update truncate small values:
measured here from both parties' shares with `mpcbandit bench hannun-wraps`'s ledger."""

import csv

import numpy as np
import pytest
from click.testing import CliRunner

from deadlines import deadline
from mpcbandit.cli import main
from mpcbandit.config import load_config
from mpcbandit.experiments import hannun_wraps as BENCH
from mpcbandit.mpc.local import run_engines
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

L = 20


def _largest_truncated(start: str) -> float:
    """The largest |x| / 2^(2L) any truncation of a reciprocal on [1, 2] shifts."""
    d = np.linspace(1.0, 2.0, 101)

    def fn(eng):
        x = eng.input(d if eng.lead else None, "compute.0")
        q = eng.reciprocal(x, 7, domain=(1.0, 2.0), start=start)
        assert np.max(np.abs(eng.open(q) * d - 1)) < 1e-5

    with BENCH.counting(BENCH.WrapLedger()) as ledger:
        run_engines(fn, 2, frac_bits=L)
    return max(ledger.largest.values())


def test_the_linear_reciprocal_truncates_only_values_below_its_start_error():
    # |1 - d x_0| <= 0.0593 from the 10-bit slope; every later value is smaller
    assert _largest_truncated("linear") < 0.065
    # the exp start squares values near 1: fifteen times the wrap probability, and more
    assert _largest_truncated("exp") > 0.9


def _hannun_ledger(*sets: str) -> BENCH.WrapLedger:
    cfg = load_config("configs/hannun-synthetic.toml", [
        "hannun.iterations=40", 'run.security="none"', *sets])
    with BENCH.counting(BENCH.WrapLedger()) as ledger:
        run_protocol_inproc(cfg, deadline_s=deadline(60))
    return ledger


def test_hannun_reciprocal_chain_with_the_linear_start_expects_under_a_fiftieth_of_the_wraps():
    per_step = {}
    for init in ("paper", "linear"):
        ledger = _hannun_ledger(f'hannun.reciprocal_init="{init}"', 'hannun.trunc="local"',
                                "hannun.newton_iterations=7")
        # the chain after its input (1 + x^T u, truncated alike by both: "_narrowed")
        per_step[init] = sum(e for site, e in ledger.expected.items()
                             if "reciprocal" in site and not site.endswith("_narrowed")) / 40
        # each run expects ~0.001 wraps in all (paper 0.0007, linear 0.0005): asserting none
        # failed about once in 800 runs (seen in the suite, 2026-11-26); two would be 1 in 10^6
        assert sum(ledger.wraps.values()) <= 1
    assert 0 < per_step["linear"] < 0.02 * per_step["paper"]


def test_hannun_default_truncates_exactly_everywhere_and_expects_no_wraps():
    ledger = _hannun_ledger()
    assert set(ledger.modes.values()) == {"exact"}
    # every site counted, ~2800 a step: u's truncation inside the score's and x^T u's products
    # (200 each), u for q u u^T (200), q u u^T (2100) and the reciprocal's
    assert ledger.elements["_select"] == ledger.elements["scaled_outer/_inverse_denominator"]
    assert ledger.elements["_select"] == 40 * 200
    assert sum(ledger.elements.values()) > 40 * 2700
    assert sum(ledger.expected.values()) == 0 and sum(ledger.wraps.values()) == 0


def test_the_ledger_sees_the_wraps_a_local_truncation_makes():
    rng = np.random.default_rng(5)
    x = 2.0 ** (30.5 - L) * rng.uniform(-1, 1, 20_000)   # products near 2^61: ~1 in 30 wraps

    def fn(eng):
        a = eng.input(x if eng.lead else None, "compute.0")
        return eng.open(eng.mul(a, a))

    with BENCH.counting(BENCH.WrapLedger()) as ledger:
        got = run_engines(fn, 2, frac_bits=L, trunc="local")[0]["compute.0"]
    failed = int(np.sum(np.abs(got - x * x) > 1.0))
    assert failed > 100 and sum(ledger.wraps.values()) == failed
    assert sum(ledger.expected.values()) == pytest.approx(failed, rel=0.2)


def test_the_bench_writes_a_row_per_call_site_and_the_verdict_against_the_bound(tmp_path):
    result = CliRunner().invoke(main, ["bench", "hannun-wraps", "--steps", "12", "--data",
                                       "synthetic", "--set", 'hannun.trunc="local"',
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    with (tmp_path / "hannun_wraps.csv").open() as f:
        rows = list(csv.DictReader(f))
    *sites, total = rows
    assert len(sites) >= 3 and total["call_site"] == "all"
    assert float(total["expected_wraps_per_step"]) == pytest.approx(
        sum(float(r["expected_wraps_per_step"]) for r in sites))
    assert all(float(r["expected_wraps_per_step"]) > 0 for r in sites)
    assert "bound 0.001" in (tmp_path / "hannun_wraps.md").read_text()
