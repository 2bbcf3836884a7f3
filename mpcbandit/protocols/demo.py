"""Demo protocol: secure sum. The runtime's end-to-end smoke test.

Input holders I_1..I_n secret-share their vectors over Z/2^64 to computing parties
C_1..C_m; each C_j adds the shares it holds (no communication) and sends its share of the
sum to the output party O alone, who reconstructs. Rounds on the critical path: 2 per
iteration; each iteration sums fresh inputs.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from mpcbandit.bodies import expect_array
from mpcbandit.config import Config, spec
from mpcbandit.mpc.prg import Prg
from mpcbandit.mpc.ring import RING_DTYPE, reconstruct, share
from mpcbandit.data import demo_data
from mpcbandit.data.demo_data import input_vector  # noqa: F401 (tests check sums with it)
from mpcbandit.data.folder import no_data
from mpcbandit.protocols import MESSAGE_OVERHEAD, PartyContext, Protocol, read_folders

INPUT, COMPUTE, OUTPUT = "input", "compute", "output"


@dataclass(frozen=True)
class DemoSection:
    """[demo]: how many input holders and computing parties, and the vector length."""

    inputs: int = spec(2, min=2, max=64, doc="input holders (n >= 2)")
    computing: int = spec(2, min=2, max=64, doc="computing parties (at least 2, else no secrecy)")
    length: int = spec(16, min=1, max=10_000_000, doc="entries per input vector")
    iterations: int = spec(1, min=1, max=10**9, doc="repeat the secure sum on fresh inputs")


def roles(s: DemoSection) -> list[tuple[str, int]]:
    return ([(INPUT, i) for i in range(s.inputs)] + [(COMPUTE, j) for j in range(s.computing)]
            + [(OUTPUT, 0)])


def peers(s: DemoSection, role: str, index: int) -> list[str]:
    computes = [f"{COMPUTE}.{j}" for j in range(s.computing)]
    if role == INPUT:
        return computes
    if role == COMPUTE:
        return [f"{INPUT}.{i}" for i in range(s.inputs)] + [f"{OUTPUT}.0"]
    return computes


def chain(digest: bytes, total: np.ndarray) -> bytes:
    """Running digest of every opened sum (resumable, unlike a hashlib object)."""
    return hashlib.sha256(digest + total.tobytes()).digest()


def run_role(ctx: PartyContext) -> dict:
    s: DemoSection = ctx.section
    computes = [f"{COMPUTE}.{j}" for j in range(s.computing)]
    inputs = [f"{INPUT}.{i}" for i in range(s.inputs)]
    prg = Prg()
    own = ctx.source() if ctx.role == INPUT else None  # my vectors
    start, state = ctx.resume() or (0, {"digest": b"", "sum": []})
    digest, result = state["digest"], state["sum"]
    for t in range(start, s.iterations):
        if ctx.role == INPUT:
            x = own.inputs(t)
            ctx.chan.exchange("share", send=dict(zip(computes, share(x, s.computing, prg))))
        elif ctx.role == COMPUTE:
            got = ctx.chan.exchange("share", recv=inputs)
            total = reconstruct([expect_array(got[p], (s.length,), p, f"share#{t}", RING_DTYPE)
                                 for p in inputs])  # sum of shares = share of the sum
            ctx.chan.exchange("open_to", send={f"{OUTPUT}.0": total})
        else:
            got = ctx.chan.exchange("open_to", recv=computes)
            total = reconstruct([expect_array(got[p], (s.length,), p, f"open_to#{t}", RING_DTYPE)
                                 for p in computes])
            digest, result = chain(digest, total), [int(v) for v in total]
        ctx.checkpoint(t + 1, {"digest": digest, "sum": result})
        ctx.progress(t + 1, s.iterations)
    if ctx.role != OUTPUT:
        return {}
    return {"sum": result, "digest": digest.hex()}


def sources(cfg: Config, role: str, index: int, folder):
    """Input holder i its own vectors (mpcbandit/data/demo_data.py); the others nothing."""
    if role != INPUT:
        return no_data(folder, f"{role}.{index}")
    return demo_data.inputs(cfg, index, folder, f"{INPUT}.{index}")


def plaintext(cfg: Config, data_dir=None) -> dict:
    """The sums in the clear (of every input holder's folder of data_dir, if given)."""
    s: DemoSection = cfg.section
    holders = [sources(cfg, INPUT, i, data_dir and data_dir / f"{INPUT}.{i}")
               for i in range(s.inputs)]
    digest = b""
    for t in range(s.iterations):
        total = np.zeros(s.length, dtype=np.uint64)
        for own in holders:
            total += own.inputs(t)
        digest = chain(digest, total)
    return {"steps": s.iterations, "sum": [int(v) for v in total], "digest": digest.hex()}


def summarize(cfg: Config, results: list[dict]) -> dict:
    """The opened sums; compared with the plaintext sums unless the inputs stayed private
    in the parties' folders (then null: `--plaintext --data` is the reference)."""
    out = next(r for r in results if r["role"] == OUTPUT)["output"]
    same = None if read_folders(results) else out["digest"] == plaintext(cfg)["digest"]
    return {"steps": cfg.section.iterations, "sum": out["sum"], "digest": out["digest"],
            "matches_plaintext": same}


def headline(s: dict) -> list[str]:
    """Whether the opened sums are the inputs' sums."""
    if s["plaintext"]:
        return [f"digest of the {s['steps']} sum(s): {s['digest'][:16]}…"]
    if s["matches_plaintext"] is None:
        return [f"the {s['steps']} opened sum(s) of the holders' own data (digest {s['digest'][:16]}…)"]
    verdict = "equal" if s["matches_plaintext"] else "DIFFER FROM"
    return [f"the {s['steps']} opened sum(s) {verdict} the plaintext sums (digest {s['digest'][:16]}…)"]


def sends_ahead(s: DemoSection) -> int:
    """Input holders send every iteration's shares without waiting for the computing parties."""
    return s.iterations * (8 * s.length + MESSAGE_OVERHEAD)


PROTOCOL = Protocol(name="demo", paper="secure sum over additive shares: the runtime's smoke test",
                    section=DemoSection, roles=roles, run_role=run_role,
                    plaintext=plaintext, summarize=summarize, peers=peers, checkpoints=True,
                    sends_ahead=sends_ahead, steps=lambda s: ("iterations", 1),
                    headline=headline, sources=sources,
                    split=lambda cfg, out, suffix: demo_data.split(
                        cfg, out, suffix, [f"{INPUT}.{i}" for i in range(cfg.section.inputs)]))
