"""Run an MPC computation with every party as a thread (in-process transport): for tests,
notebooks and round counting. Real deployments use a protocol role per party instead."""

from __future__ import annotations

from typing import Any, Callable

from dealer import serve
from mpcbandit.mpc.engine import Engine
from mpcbandit.net.inproc import run_inproc
from mpcbandit.net.netspec import NetSpec

__all__ = ["run_engines", "computing_names"]


def computing_names(n: int, role: str = "compute") -> list[str]:
    """Names of n computing parties: role.0 .. role.(n-1)."""
    return [f"{role}.{i}" for i in range(n)]


def run_engines(fn: Callable[[Engine], Any], n: int = 2, *,
                others: dict[str, Callable[[Engine], Any]] | None = None,
                dealer_kw: dict | None = None, deadline_s: float = 30.0,
                net: NetSpec | None = None, **engine_kw) -> tuple[dict[str, Any], dict]:
    """fn(eng) on n computing parties, each other party's function on its own Engine, and a
    dealer thread (net: an emulated network among them all); returns (results by party
    name, channels by party name)."""
    parties = computing_names(n)

    def computing(chan):
        eng = Engine(chan, parties, **engine_kw)
        out = fn(eng)
        eng.close()
        return out

    fns: dict[str, Callable] = {p: computing for p in parties}
    for name, f in (others or {}).items():
        fns[name] = lambda chan, f=f: f(Engine(chan, parties, **engine_kw))
    fns["dealer.0"] = lambda chan: serve(chan, parties, **(dealer_kw or {}))
    return run_inproc(fns, deadline_s=deadline_s, net=net)
