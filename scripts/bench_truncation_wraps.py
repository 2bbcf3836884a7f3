"""How many truncation wraps a Hannun run should expect, measured from its own shares.

A 2-party local truncation (SecureML) of a value x shared as x0 + x1 mod 2^64 is wrong by
2^(64-d) exactly when the two shares, read as signed integers, overflow when added: for a
uniform x0 that has probability |x| / 2^64 (x the encoded value, before the shift). This
script runs Hannun's feature holders in process (threads), records every truncation with both
holders' shares, rebuilds x and adds up, per call site, the expected number of wraps
(the sum of |x| / 2^64) and the wraps that happened. It prints the expectation per step and
per sweep of T_sweep steps (the measured rate times T_sweep / T, with the rate of the run's
last half beside it: magnitudes shrink as W^{-1} does) against the bound the defaults aim at.

    python scripts/bench_truncation_wraps.py [--steps T] [--data mnist|synthetic] [--set K=V ...]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.data import data_root  # noqa: E402
from mpcbandit.mpc import functions, truncation  # noqa: E402
from mpcbandit.mpc.ring import wraps_signed  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402

CONFIG = ROOT / "configs" / "hannun-synthetic.toml"
SWEEP = 60_000      # one pass over MNIST's training images
BOUND = 1e-3        # expected wraps per sweep the defaults must stay below (issue: privacy, item 8)
_SITE_FILES = ("mpc/functions.py", "mpc/symmetric.py", "protocols/hannun.py")


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
        self.late_expected = 0.0   # the second half of the run
        self.second_half = False

    def record(self, eng, x, d: int, mode: str) -> None:
        """One party's truncation of x by d bits; counted once both parties' have come."""
        if mode != "local":
            raise SystemExit(f"this benchmark measures local truncation, the run uses {mode!r}")
        seq = getattr(self.local, "seq", 0)
        self.local.seq = seq + 1
        # the lead adds n 2^(d-1) before shifting (unbiased rounding): that is what is shifted
        v = x.v + np.uint64(eng.n << (d - 1)) if eng.lead else x.v.copy()
        site = _site()
        with self.lock:
            other = self.waiting.pop(seq, None)
            if other is None:
                self.waiting[seq] = (site, v)
                return
        mine_site, mine = other
        assert mine_site == site, (mine_site, site)
        value = np.abs((mine + v).view(np.int64).astype(np.float64))
        p = float(value.sum()) / 2.0 ** 64
        with self.lock:
            self.largest[site] = max(self.largest[site], float(value.max()) / 2.0 ** (2 * eng.frac))
            self.expected[site] += p
            self.elements[site] += v.size
            self.wraps[site] += int(np.count_nonzero(wraps_signed([mine, v])))
            if self.second_half:
                self.late_expected += p


@contextlib.contextmanager
def counting(ledger: WrapLedger):
    """Route every truncation through the ledger (the engine's and the functions' imports)
    while the block runs."""
    original = truncation.truncate

    def counted(eng, x, d, mode=None):
        if d:
            ledger.record(eng, x, d, mode or eng.trunc)
        return (yield from original(eng, x, d, mode))

    truncation.truncate = functions.truncate = counted
    try:
        yield ledger
    finally:
        truncation.truncate = functions.truncate = original


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="bandit steps to run (default 2000)")
    ap.add_argument("--data", default=None, choices=("mnist", "synthetic"),
                    help="task (default: mnist when ../shared/data/mnist exists, else synthetic)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override, as for `mpcbandit run` (repeatable)")
    args = ap.parse_args()
    data = args.data or ("mnist" if (data_root() / "mnist").exists() else "synthetic")
    cfg = load_config(CONFIG, [f"hannun.iterations={args.steps}", f'hannun.data="{data}"',
                               'run.security="none"', *args.set])
    ledger = WrapLedger()
    half = args.steps // 2

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
    s = cfg.section
    total = sum(ledger.expected.values())
    print(f"hannun, data {data}, {args.steps} steps, A = {s.arms}, D = {s.dims}, L = "
          f"{s.precision_bits}, reciprocal_init {s.reciprocal_init}, Newton {s.newton_iterations}, "
          f"truncation {s.trunc}; {wall:.0f} s in process")
    print(f"{'call site':58} {'elements/step':>13} {'E[wraps]/step':>14} {'per sweep':>10} {'seen':>5}")
    for site in sorted(ledger.expected, key=ledger.expected.get, reverse=True):
        e = ledger.expected[site]
        print(f"{site:58} {ledger.elements[site] / args.steps:13.0f} {e / args.steps:14.3e} "
              f"{e / args.steps * SWEEP:10.2e} {ledger.wraps[site]:5d}")
    late = ledger.late_expected / max(1, args.steps - half)
    print(f"{'all':58} {sum(ledger.elements.values()) / args.steps:13.0f} "
          f"{total / args.steps:14.3e} {total / args.steps * SWEEP:10.2e} "
          f"{sum(ledger.wraps.values()):5d}")
    print(f"per {SWEEP}-step sweep: {total / args.steps * SWEEP:.2e} at this run's mean rate, "
          f"{late * SWEEP:.2e} at its second half's; bound {BOUND:g}: "
          f"{'met' if total / args.steps * SWEEP < BOUND else 'NOT met'}")


if __name__ == "__main__":
    main()
