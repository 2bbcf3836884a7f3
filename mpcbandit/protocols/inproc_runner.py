"""Run every party of a config as a thread in this process (tests, benchmarks).

The same role functions as `mpcbandit run`, over the in-process link instead of ZeroMQ;
results have the shape the launcher collects, so `summarize` works on them unchanged.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from mpcbandit.config import Config
from mpcbandit.net.channel import Channel
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols import PartyContext, get_protocol, run_timed
from mpcbandit.results import build_summary

__all__ = ["run_protocol_inproc", "inproc_summary", "inproc_summary_json"]


def run_protocol_inproc(cfg: Config, observe: Callable[[str, Channel], Channel | None] | None = None,
                        *, run_role: Callable[[PartyContext], dict] | None = None,
                        deadline_s: float | None = None,
                        data_dir: Path | None = None) -> tuple[list[dict], dict[str, Channel]]:
    """Run all parties of cfg in threads; return their records (launcher shape) and channels.

    data_dir: each party reads its own folder data_dir/<role>.<index>/ (else the built-in task).

    observe(name, chan) is called before each party starts; if it returns a channel-like
    object the party uses that instead (tests record or tamper with traffic that way).
    run_role replaces the protocol's role function (test instrumentation).
    """
    proto = get_protocol(cfg.protocol)
    roles = proto.roles(cfg.section)
    peers = {f"{r}.{i}": proto.peers_of(cfg.section, r, i) for r, i in roles}
    role_fn = run_role or proto.run_role
    if proto.prepare is not None and data_dir is None:
        for role in {r for r, _ in roles}:
            proto.prepare(cfg, role)

    def party(role: str, index: int):
        def run(chan: Channel) -> dict:
            if observe is not None:
                chan = observe(f"{role}.{index}", chan) or chan
            folder = None if data_dir is None else Path(data_dir) / f"{role}.{index}"
            return run_timed(role_fn, PartyContext(config=cfg, role=role, index=index, chan=chan,
                                                   data_dir=folder))
        return run

    results, chans = run_inproc({f"{r}.{i}": party(r, i) for r, i in roles},
                                deadline_s=deadline_s or cfg.run.deadline_s,
                                max_bytes=cfg.run.max_message_bytes, net=cfg.net, peers=peers,
                                max_buffered_bytes=proto.buffer_cap(cfg))
    return [results[f"{r}.{i}"] for r, i in roles], chans


def inproc_summary(cfg: Config, data_dir: Path | None = None) -> dict:
    """The summary of one run of cfg with every party a thread (as `run` would write it), each
    reading its own folder of data_dir if given."""
    return get_protocol(cfg.protocol).summarize(cfg, run_protocol_inproc(cfg, data_dir=data_dir)[0])


def inproc_summary_json(cfg: Config, *, resumed_from: int | None = None) -> dict:
    """The whole summary.json of one run of cfg with every party a thread (counters, hops,
    estimates and all), as if it had resumed from resumed_from."""
    t0 = time.perf_counter()
    results, _ = run_protocol_inproc(cfg)
    fields = get_protocol(cfg.protocol).summarize(cfg, results)
    return build_summary(cfg, fields, results, time.perf_counter() - t0, resumed_from=resumed_from)
