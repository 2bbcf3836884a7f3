"""How many truncation wraps a Hannun run should expect, measured from its own shares:
`mpcbandit bench hannun-wraps`.

A 2-party local truncation (SecureML) of a value x shared as x0 + x1 mod 2^64 is wrong by
2^(64-d) exactly when the two shares, read as signed integers, overflow when added: for a
uniform x0 that has probability |x| / 2^64 (x the encoded value, before the shift). The bench
runs Hannun's feature holders in one process (threads), records every truncation with both
holders' shares, rebuilds x and adds up, per call site, the expected number of wraps (the sum
of |x| / 2^64; none for exact truncation, which the default uses) and the results that were
off the true quotient by more than the rounding (wraps seen, in either mode).
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections import defaultdict

import click
import numpy as np

from mpcbandit.experiments.common import Output, experiment_command, shipped_config, sized_option
from mpcbandit.experiments.hannun import data_option, kind_of_data
from mpcbandit.mpc import functions, truncated_product, truncation
from mpcbandit.protocols.hannun import ops as hannun_batch, protocol as hannun
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

__all__ = ["WrapLedger", "bench", "counting"]

SWEEP = 60_000      # one pass over MNIST's training images
BOUND = 1e-3        # expected wraps per sweep the defaults must stay below (issue: privacy, item 8)
_SITE_FILES = ("mpc/functions.py", "mpc/symmetric.py", "protocols/hannun/protocol.py")


def _site() -> str:
    """The Hannun step function and engine function that asked for this truncation."""
    names = []
    frame = sys._getframe(2)
    while frame is not None:
        path = frame.f_code.co_filename.replace("\\", "/")
        if path.endswith(_SITE_FILES) and frame.f_code.co_name not in names:
            names.append(frame.f_code.co_name)
        frame = frame.f_back
    keep = [n for n in reversed(names) if n not in ("_step", "run", "_feature_holder", "run_role")]
    return "/".join(keep) or "_step (o_a times the update)"


class WrapLedger:
    """Pairs the two holders' i-th truncations and adds up, per call site, |x| / 2^64, the
    wraps that happened and the largest |x| / 2^(2L) truncated."""

    def __init__(self):
        self.lock = threading.Lock()
        self.local = threading.local()
        self.waiting: dict[int, tuple[str, np.ndarray]] = {}
        self.expected: dict[str, float] = defaultdict(float)
        self.elements: dict[str, int] = defaultdict(int)
        self.wraps: dict[str, int] = defaultdict(int)
        self.largest: dict[str, float] = defaultdict(float)   # |x| in units of 2^(2L)
        self.modes: dict[str, str] = {}
        self.late_expected = 0.0   # the second half of the run
        self.second_half = False

    def record(self, eng, y, d: int, mode: str, result, x=None) -> None:
        """One party's truncation of y by d bits, or its product x·⌊y/2^d⌋ with the truncation
        in the product's round (``mul_truncated``), and the result; counted once both
        parties' have come: expected wraps (local: |y|/2^64; exact: none) and the results off
        the true value by more than the rounding (times |x|): wraps seen, in either mode."""
        if mode not in ("local", "exact"):
            raise ValueError(f"the ledger counts local and exact truncations, not {mode!r} ones")
        seq = getattr(self.local, "seq", 0)
        self.local.seq = seq + 1
        # the lead adds n 2^(d-1) before shifting (unbiased rounding): that is what is shifted
        v = y.v + np.uint64(eng.n << (d - 1)) if eng.lead else y.v.copy()
        site = _site()
        with self.lock:
            other = self.waiting.pop(seq, None)
            if other is None:
                self.waiting[seq] = (site, v, None if x is None else x.v, result.v)
                return
        mine_site, mine_v, mine_x, mine_result = other
        assert mine_site == site, (mine_site, site)
        shifted = (mine_v + v).view(np.int64)
        true, rounding = shifted >> np.int64(d), eng.n
        if x is not None:
            xs = (mine_x + x.v).view(np.int64)
            true, rounding = xs * true, eng.n * np.abs(xs)    # mod 2^64, as the shares add up
        wrong = np.abs((mine_result + result.v).view(np.int64) - true) > rounding
        value = np.abs(shifted.astype(np.float64))
        p = float(value.sum()) / 2.0 ** 64 if mode == "local" else 0.0
        with self.lock:
            self.modes[site] = mode
            self.largest[site] = max(self.largest[site],
                                     float(value.max()) / 2.0 ** (2 * eng.frac))
            self.expected[site] += p
            self.elements[site] += shifted.size
            self.wraps[site] += int(np.count_nonzero(wrong))
            if self.second_half:
                self.late_expected += p


@contextlib.contextmanager
def counting(ledger: WrapLedger):
    """Route every truncation through the ledger (the engine's and the functions' imports)
    while the block runs."""
    original = truncation.truncate

    def counted(eng, x, d, mode=None):
        out = yield from original(eng, x, d, mode)
        if d:
            ledger.record(eng, x, d, mode or eng.trunc, out)
        return out

    def counted_product(eng, x, y, d):
        out = yield from fused_product(eng, x, y, d)
        if truncated_product.fuses(eng, d):   # else its truncate was counted above
            ledger.record(eng, y, d, "exact", out, x)
        return out

    fused_product = truncated_product.mul_truncated
    truncation.truncate = functions.truncate = counted
    # every module that imported the product by name: the protocol and its op chains
    truncated_product.mul_truncated = hannun.mul_truncated = hannun_batch.mul_truncated = \
        counted_product
    try:
        yield ledger
    finally:
        truncation.truncate = functions.truncate = original
        truncated_product.mul_truncated = hannun.mul_truncated = hannun_batch.mul_truncated = \
            fused_product


COLUMNS = ["call_site", "truncation", "elements_per_step", "expected_wraps_per_step",
           "expected_per_sweep", "wraps_seen"]


@experiment_command("hannun-wraps", "a 60,000-step run (one sweep of MNIST)",
                    short_help="Truncation wraps a Hannun run should expect")
@sized_option("--steps", int, 2_000, SWEEP, "Bandit steps to run (T)")
@data_option
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", show_default="none",
              help="A config override, as for `mpcbandit run` (repeatable).")
def bench(out: Output, paper: bool, steps: int, data: str | None, sets: tuple[str, ...]) -> None:
    """The truncation wraps a Hannun run should expect, per call site: elements truncated per
    step, the expected wraps per step and per 60,000-step sweep (the measured rate times the
    sweep), and the wraps that happened, against the bound the defaults aim at (1e-3 per
    sweep); the rate of the run's second half is printed beside the mean (magnitudes shrink
    as W^-1 does). Writes hannun_wraps (.csv, .md).
    """
    kind = kind_of_data(data)
    cfg = shipped_config("hannun-synthetic.toml", [
        f"hannun.iterations={steps}", f'hannun.data="{kind}"', 'run.security="none"', *sets])
    s = cfg.section
    if s.trunc not in ("auto", "local", "exact") or s.feature_holders != 2:
        raise click.UsageError(f"this bench measures local and exact truncation, which need "
                               f"hannun.trunc = \"exact\", \"local\" or \"auto\" and 2 feature "
                               f"holders (given: {s.trunc!r}, {s.feature_holders})")
    ledger = WrapLedger()
    half = steps // 2

    def watch(name, chan):
        if name == "arm_puller.0":   # p' counts steps: flag the second half for the ledger
            orig = chan.send
            count = [0]

            def send(label, peer, body):
                if label == "pull":
                    count[0] += 1
                    ledger.second_half = count[0] > half
                return orig(label, peer, body)
            chan.send = send
        return None

    t0 = time.perf_counter()
    with counting(ledger):
        run_protocol_inproc(cfg, observe=watch, deadline_s=600.0)
    wall = time.perf_counter() - t0
    rows = [[site, ledger.modes[site], round(ledger.elements[site] / steps), e / steps,
             e / steps * SWEEP, ledger.wraps[site]]
            for site, e in sorted(ledger.expected.items(), key=lambda kv: -kv[1])]
    total = sum(ledger.expected.values())
    rows.append(["all", s.trunc, round(sum(ledger.elements.values()) / steps), total / steps,
                 total / steps * SWEEP, sum(ledger.wraps.values())])
    late = ledger.late_expected / max(1, steps - half) * SWEEP
    mean = total / steps * SWEEP
    verdict = (f"per {SWEEP:,}-step sweep: {mean:.2e} expected wraps at this run's mean rate, "
               f"{late:.2e} at its second half's; bound {BOUND:g}: "
               f"{'met' if mean < BOUND else 'NOT met'}")
    out.table("hannun_wraps", COLUMNS, rows,
              f"Truncation wraps of a Hannun run ({kind}, {steps:,} steps, A = {s.arms}, "
              f"D = {s.dims}, L = {s.precision_bits}, trunc {s.trunc}, reciprocal_init "
              f"{s.reciprocal_init}, "
              f"Newton {s.newton_iterations}; {wall:.0f} s in one process)", verdict)
    click.echo((out.folder / "hannun_wraps.md").read_text())
