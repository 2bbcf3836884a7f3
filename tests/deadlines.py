"""Every wall-clock deadline of the suite, from one place: a bound in seconds, lengthened on a
busy machine by how slow the machine is this session.

A test says `deadline(60)` where it would have said 60: a bound after which it fails naming what
it waited for (a helper's wait, a subprocess's timeout, a deadline given to the product through
`--set run.deadline_s=...`). On a quiet machine deadline(60) is 60; on one where every process
gets a fifth of the CPU it would get alone it is 300. Scaling only lengthens a deadline: the
slowness is at least 1.

The slowness is measured once a session, in the controller (pytest_configure, conftest.py),
before any worker starts: the wall time of a fixed CPU workload (the median of a few repeats)
over REFERENCE_S, its time on a quiet machine of the kind the suite's timings were set on.
MPCBANDIT_TEST_SLOWNESS=N overrides the measurement (1 runs every `quiet` test on a busy
machine); the controller sets it to what it measured, so the xdist workers and every process
a test starts read the same factor.

A test whose assertion is itself a timing (a ratio of measured times, a bound that must stay
short to mean something) cannot be made right by a longer bound: it is marked
`@pytest.mark.quiet` and skips, saying why, when the slowness is above QUIET_ABOVE."""

from __future__ import annotations

import os
import statistics
import time

ENV = "MPCBANDIT_TEST_SLOWNESS"
#: the workload's wall time on a quiet machine of the kind the suite's timings were set on (2
#: cores, x86_64, the README's): measured on 2026-11-28 on this one as the workload's thread
#: CPU time, the least of 40 repeats, 0.051 s (other suites ran: load 13, so its wall time
#: was not quiet; a single-threaded CPU-bound loop's wall time is its CPU time when nothing
#: else runs)
REFERENCE_S = 0.050
REFERENCE_DATE = "2026-11-28"
#: a `quiet` test skips above this slowness (a quiet machine measures about 1; this one, with
#: other suites running at load 13, measured 2.1)
QUIET_ABOVE = 2.0
REPEATS = 7

_slowness: float | None = None
#: how this session's slowness was found (the pytest header says it)
source = ""


def _workload(n: int = 1_000_000) -> int:
    """A fixed piece of pure-Python work, ~REFERENCE_S of one core."""
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def measure(repeats: int = REPEATS) -> tuple[float, float]:
    """(slowness, the workload's median wall time): the median of `repeats` runs of the
    workload over REFERENCE_S, at least 1. Wall time, not CPU time: a busy machine makes the
    workload wait for a core, which is what makes a test's wait longer."""
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        _workload()
        walls.append(time.perf_counter() - t0)
    median = statistics.median(walls)
    return max(1.0, median / REFERENCE_S), median


def parse(text: str) -> float:
    """MPCBANDIT_TEST_SLOWNESS's value: a number, at least 1 (scaling only lengthens)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{ENV}={text!r}: give a number, e.g. {ENV}=3") from None
    if not value >= 1.0 or value == float("inf"):
        raise ValueError(f"{ENV}={text!r}: give a number from 1 up (1: a quiet machine)")
    return value


def slowness() -> float:
    """This session's slowness factor: MPCBANDIT_TEST_SLOWNESS if set (the controller sets it
    for its workers and children), else measured now and written there."""
    global _slowness, source
    if _slowness is None:
        given = os.environ.get(ENV)
        if given is not None:
            _slowness, source = parse(given), f"{ENV}={given}"
        else:
            _slowness, median = measure()
            source = (f"measured: a fixed workload took {median * 1e3:.0f} ms (median of "
                      f"{REPEATS}), {REFERENCE_S * 1e3:.0f} ms on a quiet machine "
                      f"({REFERENCE_DATE})")
            os.environ[ENV] = f"{_slowness:.2f}"
    return _slowness


def forget() -> None:
    """Drop the cached factor (the next slowness() reads the environment or measures again)."""
    global _slowness, source
    _slowness, source = None, ""


def deadline(seconds: float) -> float:
    """A wall-clock bound of `seconds` on a quiet machine, lengthened by this session's
    slowness."""
    return seconds * slowness()


#: a wait with no reason to be shorter or longer (a service's start, a party's answer), on a
#: quiet machine: `from deadlines import DEADLINE_S` is deadline(DEFAULT_S)
DEFAULT_S = 60.0


def __getattr__(name: str):
    if name == "DEADLINE_S":  # computed when asked (by then the session measured its slowness)
        return deadline(DEFAULT_S)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def wait_for(condition, what: str, deadline_s: float | None = None, every_s: float = 0.02):
    """Wait until condition() is truthy (and return it), or fail naming what was awaited after
    deadline_s (already a deadline(...); deadline(DEFAULT_S) if None)."""
    deadline_s = deadline(DEFAULT_S) if deadline_s is None else deadline_s
    end = time.monotonic() + deadline_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            scaled = f" (deadlines x{slowness():.2f} on this machine)" if slowness() > 1 else ""
            raise AssertionError(f"not within {deadline_s:g} s{scaled}: {what}")
        time.sleep(every_s)


def needs_quiet(factor: float | None = None) -> str | None:
    """Why a `quiet` test skips at this slowness, or None when it runs."""
    factor = slowness() if factor is None else factor
    if factor <= QUIET_ABOVE:
        return None
    return (f"needs a quiet machine: it asserts measured times (a ratio, a bound in seconds), "
            f"and this machine's slowness is {factor:.1f} (> {QUIET_ABOVE:g}); {ENV}=1 runs "
            f"it anyway")


def header() -> str:
    """The pytest header's line."""
    factor = slowness()
    return (f"slowness {factor:.2f} ({source}): every deadline x{factor:.2f}; "
            f"`quiet` tests {'skip' if needs_quiet(factor) else 'run'} "
            f"(they skip above {QUIET_ABOVE:g})")
