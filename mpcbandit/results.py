"""summary.json: one schema for every protocol (documented in docs/summary.md)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from mpcbandit import __version__
from mpcbandit.config import Config
from mpcbandit.files import write_json
from mpcbandit.net.netspec import NET_PRESETS, NetSpec
from mpcbandit.protocols import get_protocol, privacy_record
from mpcbandit.provenance import software_versions

__all__ = ["PARTY_KEYS", "SCHEMA_VERSION", "build_summary", "estimate_seconds", "local_seconds",
           "format_summary", "write_summary", "write_csv"]

PARTY_KEYS = ("role", "index", "pid", "host", "rounds", "hops", "messages", "bytes_sent",
              "bytes_received", "compute_s", "wait_s", "by_op", "close_s", "control_messages")


def estimate_seconds(local_s: float, hops: float, nbytes: float, net: str) -> float:
    """Time on a named network (docs/summary.md, "Time on a network"): the time on this host
    without delays + hops x one-way delay + the busiest party's bytes / bandwidth."""
    one_way, bw = NET_PRESETS[net]
    return local_s + hops * one_way + (nbytes / bw if bw else 0.0)


def local_seconds(protocol_wall_s: float, compute_s: float, hops: int, nbytes: int,
                  net: NetSpec) -> float:
    """A run's protocol time on this host without the delays its own emulated network added
    (never below its busiest party's compute time)."""
    added = hops * net.one_way_s + (nbytes / net.bytes_per_s if net.bytes_per_s else 0.0)
    return max(compute_s, protocol_wall_s - added)


#: the summary's shape; raise it when a key changes meaning or type (docs/summary.md)
SCHEMA_VERSION = 3


def build_summary(cfg: Config, fields: dict, parties: list[dict], wall_s: float, *,
                  plaintext: bool = False, resumed_from: int | None = None) -> dict:
    """The summary of a run: common keys, the protocol's fields, per-party accounting.

    `fields` is what the protocol's summarize (or plaintext) returned: `steps`, and where it has
    them `series` (per-step lists), `agents` (per-agent records), `cumulative_reward`,
    `cumulative_regret`, `privacy` (its parameters), and keys of its own (docs/summary.md).
    Per-step figures divide the counters by the steps they cover: after a --resume, the
    resumed part's; the whole run's estimate scales them to every step.
    """
    fields = dict(fields)
    steps = int(fields.pop("steps", 1)) or 1
    counted = max(steps - (resumed_from or 0), 1)
    rounds_total = max((p["rounds"] for p in parties), default=0)
    hops_total = max((p.get("hops", 0) for p in parties), default=0)
    max_bytes = max((p["bytes_sent"] + p["bytes_received"] for p in parties), default=0)
    protocol_wall = max((p.get("protocol_wall_s", 0.0) for p in parties), default=wall_s)
    net = cfg.net
    local = local_seconds(protocol_wall, max((p["compute_s"] for p in parties), default=0.0),
                          hops_total, max_bytes, net)
    whole = steps / counted  # a resumed run's counters cover its resumed part only
    reward, regret = fields.pop("cumulative_reward", None), fields.pop("cumulative_regret", None)
    summary: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "mpcbandit_version": __version__,
        "software": software_versions(),
        "protocol": cfg.protocol,
        "plaintext": plaintext,
        "seed": cfg.seed,
        "config": cfg.raw,
        "config_resolved": cfg.resolved(),
        "wall_s": wall_s,
        "protocol_wall_s": protocol_wall,
        "steps": steps,
        "counted_steps": counted,
        "cumulative_reward": None if reward is None else float(reward),
        "cumulative_regret": None if regret is None else float(regret),
        "rounds_total": rounds_total,
        "rounds_per_step": rounds_total / counted,
        "hops_total": hops_total,
        "hops_per_step": hops_total / counted,
        "bytes_per_step": max_bytes / counted,
        "net": {"name": net.name, "one_way_ms": net.one_way_s * 1e3,
                "mbit_s": net.bytes_per_s * 8 / 1e6 if net.bytes_per_s else None},
        "local_s": local,
        "estimate_s": {n: estimate_seconds(local * whole, hops_total * whole, max_bytes * whole, n)
                       for n in ("lan", "wan")},
        "parties": [{k: p[k] for k in PARTY_KEYS if k in p} | {"protocol_wall_s": p.get("protocol_wall_s")}
                    for p in parties],
        # whether the run was private, beside the protocol's own privacy parameters if any
        "privacy": dict(fields.pop("privacy", None) or {}) | (
            privacy_record(cfg) if not plaintext
            else {"private": False, "warnings": ["plaintext reference"]}),
        "series": fields.pop("series", {}),
        "resumed_from": resumed_from,
    }
    clash = sorted(set(fields) & set(summary))
    if clash:
        raise ValueError(f"protocol {cfg.protocol} returned summary keys that are common keys: {clash}")
    return summary | fields


def write_summary(out_dir: Path, summary: dict) -> Path:
    """Write out_dir/summary.json and return its path."""
    return write_json(out_dir / "summary.json", summary)


def _kb(n: float) -> str:
    return f"{n / 1e3:.1f} KB" if n < 1e6 else f"{n / 1e6:.2f} MB"


def format_summary(s: dict) -> str:
    """A few human lines about a summary."""
    kind = "plaintext reference" if s["plaintext"] else f"{len(s['parties'])} processes"
    if s["plaintext"]:
        wall = f"wall {s['wall_s']:.2f} s (the reference, in this process)"
    elif s["wall_s"] == s["protocol_wall_s"]:  # `collect`: the parties' results hold no more
        wall = f"wall {s['wall_s']:.2f} s (the parties' protocol time: start-up not included)"
    else:
        wall = (f"wall {s['wall_s']:.2f} s from spawning the parties to their exit, start-up "
                f"included (protocol {s['protocol_wall_s']:.3f} s)")
    lines = [f"{s['protocol']}: {s['steps']} step(s), seed {s['seed']}, {kind}, {wall}"]
    headline = get_protocol(s["protocol"]).headline
    if headline is not None:
        lines += headline(s)
    elif s.get("cumulative_reward") is not None:
        lines.append(f"cumulative reward: {s['cumulative_reward']:g}")
    if not s["plaintext"]:
        counted = ("" if s["counted_steps"] == s["steps"] else
                   f" (over the {s['counted_steps']} steps this run counted, resumed from step "
                   f"{s['resumed_from']})")
        lines.append(f"per step{counted}: {s['rounds_per_step']:.1f} communication rounds and "
                     f"{_kb(s['bytes_per_step'])} at the busiest party; {s['hops_per_step']:.1f} "
                     "hops (the longest chain of messages each sent on receipt of the one "
                     f"before: one one-way delay each); net {s['net']['name']}")
        est = s["estimate_s"]
        lines.append(f"protocol time on a network by the model: lan {est['lan']:.3f} s, wan "
                     f"{est['wan']:.3f} s (this host's {s['local_s']:.3f} s without delays + hops "
                     "x one-way delay + bytes / bandwidth; docs/summary.md)")
    return "\n".join(lines)


def write_csv(path: Path, rows: list[dict], columns: list[str] | None = None) -> Path:
    """Write rows (dicts) as CSV with a header; columns default to the first row's keys."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns or list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return path
