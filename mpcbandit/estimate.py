"""How long a run on an emulated network will take, said before it starts.

The estimate is a model of the run, each of its parts measured by two short probes of the same
config on the same emulated network (real runs: the same processes, keys, transport and delays):

    run = start-up + set-up + steps x (hops x one-way delay + bytes / bandwidth + compute)

- start-up: what a probe took beyond its protocol's time (spawning the parties, their imports,
  keys, the hello, the closing handshake, the summary), measured apart from the steps;
- set-up: the protocol's time outside its timed steps (before the first, after the last);
- per step: hops and bytes from the probes' counters (their difference over the steps between
  them, which cancels what set-up sends); the one-way delay and bandwidth are the network's own
  (--net); compute is the rest of a step's time, as the slowest party timed its steps from its
  first progress report to its last (`timed_steps` in its result file).

Hops, not rounds, count the delays: a hop is one one-way delay the run waits in sequence, which a
party's rounds overcount where messages are sent ahead and undercount along a chain of parties
(docs/summary.md, "Time on a network"). Each probe gives every part; the estimate takes start-up
and set-up as their mean and a step over all the steps both timed (the first probe times a few,
the second most), and its range is each probe's own extrapolation: the two probes' spread,
assuming the machine stays as loaded as during them and every step costs the same (not a
confidence interval).

The probes cost at most a tenth of the run as estimated: the first (a few steps) measures
start-up and a step; the second is sized from it, with a margin for the first's few steps, and is
not made when nothing is left (the result then says why). A run with too few steps for two
probes within a tenth is not probed at all.
"""

from __future__ import annotations

import json
import math
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.launch import run_local
from mpcbandit.net.netspec import NetSpec
from mpcbandit.protocols import clock, get_protocol, with_steps

__all__ = ["DurationEstimate", "NotEstimated", "Probe", "FIRST_EXTRA_STEPS", "FIRST_STEP_MARGIN",
           "LEAST_SPAN", "PROBE_SHARE", "estimate_duration", "fit", "first_probe_steps", "probe",
           "second_probe_steps", "why_not_probed"]

#: the probes cost at most 1/PROBE_SHARE of the run they estimate
PROBE_SHARE = 10
#: steps the first probe runs beyond the fewest a run may have: the steps it times after its first
FIRST_EXTRA_STEPS = 3
#: the fewest steps the second probe runs beyond the first's: the counters' difference per step
#: is over at least these
LEAST_SPAN = 3
#: how much slower than the run's the first probe's few steps may be and the probes still stay
#: within a tenth: the second probe is sized for a tenth of the run divided by this, as the first
#: extrapolates it (a first probe that saw slow steps overestimates the run, and the budget)
FIRST_STEP_MARGIN = 2


@dataclass(frozen=True)
class Probe:
    """What one probe of `steps` steps measured."""

    steps: int
    seconds: float  # the whole probe as `run` spends it: start-up, protocol, summary
    protocol_s: float  # the protocol's time: the summary's protocol_wall_s
    hops: int  # the summary's hops_total
    bytes: float  # the busiest party's bytes, sent and received
    timed_steps: int  # the steps the slowest party timed (0: none)
    timed_s: float

    @property
    def startup_s(self) -> float:
        """The probe's time beyond its protocol's."""
        return self.seconds - self.protocol_s

    @property
    def step_s(self) -> float:
        """One step's time, delays included, as the slowest party timed its steps."""
        return self.timed_s / self.timed_steps if self.timed_steps else 0.0

    @property
    def setup_s(self) -> float:
        """The protocol's time beyond its steps at step_s each."""
        return max(0.0, self.protocol_s - self.steps * self.step_s)


@dataclass(frozen=True)
class DurationEstimate:
    """A run's estimated duration on its network, part by part, and the probes that measured it."""

    steps: int
    startup_s: float
    setup_s: float
    hops_per_step: float
    bytes_per_step: float
    one_way_s: float
    bytes_per_s: float | None
    compute_s: float  # per step
    low_s: float
    high_s: float
    probes: tuple[Probe, Probe]

    @property
    def delay_s(self) -> float:
        """One step's delays on the network: hops x one-way delay + bytes / bandwidth."""
        return (self.hops_per_step * self.one_way_s
                + (self.bytes_per_step / self.bytes_per_s if self.bytes_per_s else 0.0))

    def parts(self) -> dict[str, float]:
        """The run's estimated seconds, part by part (they add up to `seconds`)."""
        return {"start-up": self.startup_s, "set-up": self.setup_s,
                "delays": self.steps * self.delay_s, "compute": self.steps * self.compute_s}

    @property
    def seconds(self) -> float:
        """The run's estimated duration, start-up included."""
        return sum(self.parts().values())

    @property
    def probes_s(self) -> float:
        """What the probes took."""
        return sum(p.seconds for p in self.probes)

    def lines(self, net_name: str) -> list[str]:
        """The estimate for the console: the duration, its parts, and how they were measured."""
        band = (f" + {self.bytes_per_step / 1e3:.1f} KB / {self.bytes_per_s * 8 / 1e6:g} Mbit/s"
                if self.bytes_per_s else "")
        a, b = self.probes
        return [
            f"estimated duration on {net_name}: {clock(self.seconds)} (range {clock(self.low_s)} "
            f"to {clock(self.high_s)}) for {self.steps:,} steps, start-up included",
            f"  = start-up {self.startup_s:.1f} s + set-up {self.setup_s:.2f} s + {self.steps:,} x "
            f"({self.hops_per_step:.1f} hops x {self.one_way_s * 1e3:g} ms{band} + "
            f"{self.compute_s * 1e3:.2f} ms compute) per step",
            f"  measured by probes of {a.steps} and {b.steps} steps on {net_name}, which took "
            f"{self.probes_s:.1f} s ({self.probes_s / self.seconds:.0%} of the estimate); the "
            "range is each probe's own extrapolation, assuming the machine stays as loaded as "
            "during them and every step costs the same",
        ]


@dataclass(frozen=True)
class NotEstimated:
    """Why a run on an emulated network gets no estimate."""

    why: str

    def lines(self, net_name: str) -> list[str]:
        """The reason for the console."""
        return [f"duration on {net_name} not estimated: {self.why}"]


def fit(probes: tuple[Probe, Probe], steps: int, net: NetSpec) -> DurationEstimate:
    """The model of a run of `steps` steps on net, from two probes of different steps."""
    a, b = sorted(probes, key=lambda p: p.steps)
    span = b.steps - a.steps
    if span <= 0:
        raise ValueError(f"two probes of different steps are needed, not {a.steps} and {b.steps}")
    hops, nbytes = max(0.0, (b.hops - a.hops) / span), max(0.0, (b.bytes - a.bytes) / span)
    delay = hops * net.one_way_s + (nbytes / net.bytes_per_s if net.bytes_per_s else 0.0)
    # what a probe's steps took beyond the network's delays (a delay may come in under the
    # model's, bandwidth being charged at the busiest party's whole traffic: then no compute)
    def compute(step_s: float) -> float:
        return max(0.0, step_s - delay)

    own = [p.startup_s + p.setup_s + steps * (delay + compute(p.step_s)) for p in (a, b)]
    # a step over every step the probes timed: the first probe's few weigh as few
    timed = a.timed_steps + b.timed_steps
    est = DurationEstimate(steps=steps, startup_s=(a.startup_s + b.startup_s) / 2,
                           setup_s=(a.setup_s + b.setup_s) / 2, hops_per_step=hops,
                           bytes_per_step=nbytes, one_way_s=net.one_way_s,
                           bytes_per_s=net.bytes_per_s,
                           compute_s=compute((a.timed_s + b.timed_s) / timed if timed else 0.0),
                           low_s=min(own), high_s=max(own), probes=(a, b))
    # the weighted step can put the estimate past both probes' own when their start-ups differ
    # the other way from their steps: the range holds it too
    return replace(est, low_s=min(est.low_s, est.seconds), high_s=max(est.high_s, est.seconds))


def _steps(cfg: Config) -> tuple[int, int] | None:
    """(the run's steps, the fewest a run of its section may have), None without steps."""
    counts = get_protocol(cfg.protocol).steps
    if counts is None:
        return None
    key, least = counts(cfg.section)
    return getattr(cfg.section, key), least


def first_probe_steps(least: int) -> int:
    """The first probe's steps, for a section whose runs have at least `least`."""
    return least + FIRST_EXTRA_STEPS


def why_not_probed(cfg: Config) -> str | None:
    """Why cfg cannot be probed within a tenth of its run before probing; None if it may be."""
    counted = _steps(cfg)
    if counted is None:
        return f"protocol {cfg.protocol} has no bandit steps to extend probes over"
    total, least = counted
    first = first_probe_steps(least)
    fewest = PROBE_SHARE * (2 * first + LEAST_SPAN)
    if total < fewest:
        # each probe pays the run's start-up and set-up too: its steps' share is its least cost
        return (f"{total:,} steps are too few to probe within a tenth of the run (two probes run "
                f"at least {first} and {first + LEAST_SPAN} steps; runs of {fewest:,} steps or "
                "more are probed)")
    return None


def second_probe_steps(first: Probe, steps: int) -> int | None:
    """The second probe's steps: as many as keep both probes within a tenth of the run if the
    first's steps were up to FIRST_STEP_MARGIN times the run's; None when fewer than LEAST_SPAN
    more than the first's would."""
    if first.step_s <= 0:
        return None
    run = first.startup_s + first.setup_s + steps * first.step_s
    # the second probe costs the first's start-up and set-up again, and step_s a step
    room = (run / (PROBE_SHARE * FIRST_STEP_MARGIN) - first.seconds
            - (first.startup_s + first.setup_s))
    more = math.floor(room / first.step_s) - first.steps
    return first.steps + more if more >= LEAST_SPAN else None


def probe(cfg: Config, steps: int, *, insecure: bool = False) -> Probe:
    """Run cfg for `steps` steps on its network, in a folder of its own, and measure it."""
    with tempfile.TemporaryDirectory(prefix="mpcbandit-probe-") as d:
        out = Path(d) / "run"
        t0 = time.perf_counter()
        s = run_local(with_steps(cfg, steps), out, echo=lambda *_: None, insecure=insecure)
        seconds = time.perf_counter() - t0
        timed = [t for f in sorted((out / "parties").glob("*.json"))
                 if (t := json.loads(f.read_text()).get("timed_steps"))]
    # the slowest party's steps: the run ends when its last party does
    slowest = max(timed, key=lambda t: t["seconds"] / (t["last"] - t["first"]), default=None)
    return Probe(steps=steps, seconds=seconds, protocol_s=s["protocol_wall_s"],
                 hops=s["hops_total"], bytes=s["bytes_per_step"] * s["counted_steps"],
                 timed_steps=slowest["last"] - slowest["first"] if slowest else 0,
                 timed_s=slowest["seconds"] if slowest else 0.0)


def estimate_duration(cfg: Config, *, insecure: bool = False,
                      echo=lambda *_: None) -> DurationEstimate | NotEstimated:
    """Probe cfg (which why_not_probed lets through) twice on its network and model its run."""
    total, least = _steps(cfg)
    net = cfg.net.name
    n1 = first_probe_steps(least)
    echo(f"[mpcbandit] estimating the duration on {net}: a first probe of {n1} steps")
    first = probe(cfg, n1, insecure=insecure)
    n2 = second_probe_steps(first, total)
    if n2 is None:
        if first.step_s <= 0:
            return NotEstimated(f"the probe of {n1} steps timed none of its steps")
        run = first.startup_s + first.setup_s + total * first.step_s
        return NotEstimated(
            f"the run is too short to probe within a tenth of it: a first probe of {n1} steps "
            f"took {first.seconds:.1f} s (start-up {first.startup_s:.1f} s), by which the run "
            f"takes about {clock(run)}; the probes are planned within "
            f"{run / (PROBE_SHARE * FIRST_STEP_MARGIN):.1f} s by it (a tenth, divided by "
            f"{FIRST_STEP_MARGIN} for the first probe's few steps), and a second probe of "
            f"{n1 + LEAST_SPAN} steps or more would not fit")
    echo(f"[mpcbandit] and a second probe of {n2} steps (the two within a tenth of the run, "
         "with a margin for the first's few steps)")
    return fit((first, probe(cfg, n2, insecure=insecure)), total, cfg.net)
