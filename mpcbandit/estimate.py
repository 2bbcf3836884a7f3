"""How long a run on an emulated network will take, said before it starts.

Two short probes of the same config on the same emulated network (a few steps and a few more)
give, by their difference, the seconds, rounds and bytes of one step and, by their intercept,
those of start-up and set-up; the estimate extends that line to the run's steps. Probes are
real runs: the same processes, keys, transport and delays as the run they measure. (A finished
run's summary gives the analytic estimate instead, from its own counters: its time without
delays + hops x one-way delay + bytes / bandwidth, docs/summary.md "Time on a network".)
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from mpcbandit.config import Config
from mpcbandit.launch import run_local
from mpcbandit.protocols import clock, get_protocol, with_steps

__all__ = ["DurationEstimate", "PROBE_EXTRA_STEPS", "estimate_duration", "worth_estimating"]

#: steps the two probes run beyond the fewest a run of the section may have
PROBE_EXTRA_STEPS = (3, 13)
#: a run is probed when it has at least this many times the longer probe's steps (the probes
#: then cost about a tenth of the run or less)
PROBE_SHARE = 10


@dataclass(frozen=True)
class DurationEstimate:
    """A run's estimated duration on its network, and what the probes measured per step."""

    steps: int
    seconds: float
    rounds_per_step: float
    bytes_per_step: float
    seconds_per_step: float
    probe_steps: tuple[int, int]
    probe_wall_s: float

    def line(self, net_name: str) -> str:
        """One sentence for the console."""
        return (f"estimated duration on {net_name}: {clock(self.seconds)} for {self.steps:,} steps "
                f"({self.seconds_per_step * 1e3:.1f} ms, {self.rounds_per_step:.1f} rounds and "
                f"{self.bytes_per_step / 1e3:.1f} KB per step; measured by probes of "
                f"{self.probe_steps[0]} and {self.probe_steps[1]} steps on {net_name} that took "
                f"{self.probe_wall_s:.1f} s)")


def worth_estimating(cfg: Config) -> bool:
    """Whether cfg runs on an emulated network for long enough that probing it first pays."""
    steps = get_protocol(cfg.protocol).steps
    if steps is None or not cfg.net.emulated:
        return False
    key, least = steps(cfg.section)
    return getattr(cfg.section, key) >= PROBE_SHARE * (least + PROBE_EXTRA_STEPS[1])


def estimate_duration(cfg: Config, *, insecure: bool = False) -> DurationEstimate:
    """Probe cfg twice on its network and extend the probes' line to its steps."""
    key, least = get_protocol(cfg.protocol).steps(cfg.section)
    total = getattr(cfg.section, key)
    sizes = tuple(least + extra for extra in PROBE_EXTRA_STEPS)
    points = []
    for n in sizes:
        probe = with_steps(cfg, n)
        with tempfile.TemporaryDirectory(prefix="mpcbandit-probe-") as d:
            s = run_local(probe, Path(d) / "run", echo=lambda *_: None, insecure=insecure)
        points.append((s["wall_s"], s["rounds_total"], s["bytes_per_step"] * s["steps"]))
    (w1, r1, b1), (w2, r2, b2) = points
    span = sizes[1] - sizes[0]
    per_step = [(w2 - w1) / span, (r2 - r1) / span, (b2 - b1) / span]
    # the line through both probes, extended to the run's steps (never below the longer probe)
    return DurationEstimate(steps=total, seconds=max(w2, w2 + per_step[0] * (total - sizes[1])),
                            rounds_per_step=per_step[1], bytes_per_step=per_step[2],
                            seconds_per_step=max(per_step[0], 0.0),
                            probe_steps=sizes, probe_wall_s=w1 + w2)
