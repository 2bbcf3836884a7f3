"""Table 1 of Hannun et al.: the MPC ops run by real computing-party processes plus a dealer.

Each computing party runs every configured op ``repeats`` times (after one warm-up run that
also fills the dealer pools) and reports, per op, the rounds and bytes of one call (measured
by the transport under the op's label), the median wall time, the numpy time for the same
computation, and the largest error against numpy.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import numpy as np

from dealer import serve
from mpcbandit.config import Config, spec
from mpcbandit.errors import ConfigError
from mpcbandit.mpc.compare import ARGMAX_METHODS
from mpcbandit.mpc.engine import TRUNC_CHOICES, Engine
from mpcbandit.mpc.provider import engine_ahead_bytes
from mpcbandit.protocols import PartyContext, Protocol, seeded_rng

COMPUTE, DEALER = "compute", "dealer"
OPS = ("add", "mul", "lt", "argmax", "reciprocal", "exp")
#: extra op: one bare exchange of 8 bytes between the computing parties (the transport floor)
EXTRA_OPS = ("exchange",)


@dataclass(frozen=True)
class MpcOpsSection:
    """[mpcops]: which ops, how big, how many computing parties."""

    parties: int = spec(2, min=2, max=16, doc="computing parties (the dealer comes on top)")
    ops: list[str] = spec(list(OPS), doc="ops to run, from add, mul, lt, argmax, reciprocal, exp "
                                         "(and 'exchange': one bare round, the transport floor)")
    size: int = spec(1000, min=1, max=10_000_000, doc="elements per call (all ops but argmax)")
    arms: list[int] = spec([10, 100], max=10_000_000, doc="argmax vector lengths A")
    repeats: int = spec(7, min=1, max=100_000, doc="timed calls per op (median reported)")
    frac_bits: int = spec(20, min=8, max=40, doc="fixed-point fractional bits L")
    trunc: str = spec("auto", choices=TRUNC_CHOICES, doc="truncation after products")
    argmax_method: str = spec("auto", choices=ARGMAX_METHODS, doc="how the argmax op compares")
    reciprocal_iterations: int = spec(7, min=1, max=30,
                                      doc="Newton iterations of the reciprocal op")

    def validate(self, path: str) -> None:
        for i, op in enumerate(self.ops):
            if op not in OPS + EXTRA_OPS:
                raise ConfigError(f"{path}.ops[{i}]",
                                  f"{op!r} is not one of {', '.join(OPS + EXTRA_OPS)}")
        for i, a in enumerate(self.arms):
            if a < 2:
                raise ConfigError(f"{path}.arms[{i}]", f"argmax needs at least 2 arms, got {a}")
        if self.trunc == "local" and self.parties != 2:
            raise ConfigError(f"{path}.trunc", "'local' truncation is only correct for 2 parties")


def roles(s: MpcOpsSection) -> list[tuple[str, int]]:
    return [(COMPUTE, j) for j in range(s.parties)] + [(DEALER, 0)]


def computing(s: MpcOpsSection) -> list[str]:
    return [f"{COMPUTE}.{j}" for j in range(s.parties)]


def _cases(s: MpcOpsSection) -> list[tuple[str, int]]:
    return [(op, a) for op in s.ops for a in (s.arms if op == "argmax" else [s.size])]


def _inputs(seed: int, op: str, size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = seeded_rng(seed, f"mpcops/{op}/{size}")
    if op == "reciprocal":
        return rng.uniform(1.0, 10.0, size), np.zeros(size)
    if op == "exp":
        return rng.uniform(-4.0, 2.0, size), np.zeros(size)
    return rng.normal(0.0, 4.0, size), rng.normal(0.0, 4.0, size)


def _plain(op: str, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if op == "exchange":
        return x
    if op == "add":
        return x + y
    if op == "mul":
        return x * y
    if op == "lt":
        return (x < y).astype(np.float64)
    if op == "argmax":
        return (np.arange(x.size) == np.argmax(x)).astype(np.float64)
    if op == "reciprocal":
        return 1.0 / x
    return np.exp(x)


def _secure(eng: Engine, s: MpcOpsSection, op: str, x, y):
    if op == "exchange":
        eng.chan.exchange("exchange", send=dict.fromkeys(eng.others, 0), recv=eng.others)
        return x
    if op == "add":
        return x + y
    if op == "mul":
        return eng.mul(x, y)
    if op == "lt":
        return eng.lt(x, y)
    if op == "argmax":
        return eng.argmax(x, s.argmax_method)
    if op == "reciprocal":
        return eng.reciprocal(x, s.reciprocal_iterations)
    return eng.exp(x, domain=(-4.0, 2.0))


def _median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run_ops(eng: Engine, s: MpcOpsSection, seed: int) -> list[dict]:
    """Time every configured op on this computing party; one record per (op, size)."""
    records = []
    for op, size in _cases(s):
        xv, yv = _inputs(seed, op, size)
        x = eng.input(xv if eng.lead else None, eng.parties[0])
        y = eng.input(yv if eng.lead else None, eng.parties[0])
        out = _secure(eng, s, op, x, y)                      # warm-up: fills dealer pools
        label = op
        before = eng.chan.stats.op(label).to_dict()
        _secure(eng, s, op, x, y)
        after = eng.chan.stats.op(label).to_dict()
        median = _median_time(lambda: _secure(eng, s, op, x, y), s.repeats)
        plain = _median_time(lambda: _plain(op, xv, yv), max(s.repeats, 5))
        got = eng.open(out)
        records.append({
            "op": op, "parties": eng.n, "size": size, "trunc": eng.trunc,
            "rounds": after["rounds"] - before["rounds"],
            "bytes_per_party": (after["bytes_sent"] + after["bytes_received"]
                                - before["bytes_sent"] - before["bytes_received"]),
            "median_s": median, "plaintext_s": plain,
            "max_err": float(np.max(np.abs(got - _plain(op, xv, yv)))),
        })
    return records


def run_role(ctx: PartyContext) -> dict:
    s: MpcOpsSection = ctx.section
    parties = computing(s)
    if ctx.role == DEALER:
        return serve(ctx.chan, parties)
    eng = Engine(ctx.chan, parties, dealer=f"{DEALER}.0", frac_bits=s.frac_bits, trunc=s.trunc)
    records = run_ops(eng, s, ctx.config.seed)
    eng.close()
    ctx.progress(1, 1)
    return {"ops": records}


def plaintext(cfg: Config) -> dict:
    s: MpcOpsSection = cfg.section
    recs = []
    for op, size in _cases(s):
        xv, yv = _inputs(cfg.seed, op, size)
        recs.append({"op": op, "size": size,
                     "plaintext_s": _median_time(lambda: _plain(op, xv, yv), max(s.repeats, 5))})
    return {"steps": 1, "ops": recs}


def summarize(cfg: Config, results: list[dict]) -> dict:
    lead = next(r for r in results if r["role"] == COMPUTE and r["index"] == 0)
    return {"steps": 1, "ops": lead["output"]["ops"]}


def headline(s: dict) -> list[str]:
    """One line per (op, size): rounds, time per call against numpy, error."""
    if s["plaintext"]:
        return [f"{r['op']:<11} size {r['size']:>6}: numpy {1e3 * r['plaintext_s']:.4f} ms" for r in s["ops"]]
    lines = [f"{'op':<11} {'size':>6} {'rounds':>6} {'ms/call':>9} {'numpy ms':>9} {'slow-down':>9} "
             f"{'KB/party':>9} {'max err':>9}"]
    for r in s["ops"]:
        slow = r["median_s"] / r["plaintext_s"] if r["plaintext_s"] > 0 else float("inf")
        lines.append(f"{r['op']:<11} {r['size']:>6} {r['rounds']:>6} {1e3 * r['median_s']:>9.3f} "
                     f"{1e3 * r['plaintext_s']:>9.4f} {slow:>8,.0f}x {r['bytes_per_party'] / 1e3:>9.1f} "
                     f"{r['max_err']:>9.2g}")
    return lines


def sends_ahead(s: MpcOpsSection) -> int:
    """Engine traffic: an op opens at most a few values per element (argmax: per pair)."""
    return engine_ahead_bytes(3 * max([s.size] + [a * a for a in s.arms]))


PROTOCOL = Protocol(name="mpcops", paper="the MPC engine's operations (Hannun et al. 2019, Table 1)",
                    section=MpcOpsSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, sends_ahead=sends_ahead, headline=headline,
                    no_checkpoints_because="a benchmark: each op's figures are the medians of "
                    "one process's timed calls, which a resumed run would not measure (a run "
                    "takes seconds; start it again)")
