"""Run every party of a config as a thread in this process (tests, benchmarks).

The same role functions as `mpcbandit run`, over the in-process link instead of ZeroMQ;
results have the shape the launcher collects, so `summarize` works on them unchanged.
"""

from __future__ import annotations

import time
from typing import Callable

from mpcbandit.config import Config
from mpcbandit.net.channel import Channel
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols import PartyContext, get_protocol

__all__ = ["run_protocol_inproc"]


def run_protocol_inproc(cfg: Config, observe: Callable[[str, Channel], None] | None = None
                        ) -> tuple[list[dict], dict[str, Channel]]:
    """Run all parties of cfg in threads; observe(name, chan) is called before each starts."""
    proto = get_protocol(cfg.protocol)
    roles = proto.roles(cfg.section)
    peers = {f"{r}.{i}": proto.peers_of(cfg.section, r, i) for r, i in roles}

    def party(role: str, index: int):
        def run(chan: Channel) -> dict:
            if observe is not None:
                observe(f"{role}.{index}", chan)
            ctx = PartyContext(config=cfg, role=role, index=index, chan=chan)
            chan.start_clock()
            t0 = time.perf_counter()
            output = proto.run_role(ctx)
            wall = time.perf_counter() - t0
            return {"role": role, "index": index, "name": f"{role}.{index}",
                    **chan.stats.total().to_dict(), "protocol_wall_s": wall,
                    "by_op": chan.stats.to_dict(), "output": output}
        return run

    results, chans = run_inproc({f"{r}.{i}": party(r, i) for r, i in roles},
                                deadline_s=cfg.run.deadline_s, max_bytes=cfg.run.max_message_bytes,
                                net=cfg.net, peers=peers)
    return [results[f"{r}.{i}"] for r, i in roles], chans
