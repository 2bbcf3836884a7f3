"""Protocol registry and the context a party's protocol code runs in.

A protocol module defines ``PROTOCOL = Protocol(...)``: its config section, its party table,
what each role does (written against a Channel, never against zmq), a plaintext reference and
how per-party outputs become the summary. Register it in ``mpcbandit.config.PROTOCOL_MODULES``.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from mpcbandit.config import Config, import_protocol_module
from mpcbandit.net.channel import Channel

__all__ = ["Protocol", "PartyContext", "get_protocol", "all_peers"]


@dataclass(frozen=True)
class Protocol:
    """What the runtime needs to know about one protocol."""

    name: str
    section: type
    roles: Callable[[Any], list[tuple[str, int]]]
    run_role: Callable[["PartyContext"], dict]
    plaintext: Callable[[Config], dict]
    summarize: Callable[[Config, list[dict]], dict]
    peers: Callable[[Any, str, int], list[str]] | None = None

    def peers_of(self, section: Any, role: str, index: int) -> list[str]:
        """Names of the parties that (role, index) exchanges messages with."""
        if self.peers is None:
            return all_peers(self.roles(section), role, index)
        return self.peers(section, role, index)


def all_peers(roles: list[tuple[str, int]], role: str, index: int) -> list[str]:
    """Every party but (role, index): the default when a protocol does not narrow it."""
    me = f"{role}.{index}"
    return [f"{r}.{i}" for r, i in roles if f"{r}.{i}" != me]


def get_protocol(name: str) -> Protocol:
    """The registered protocol called name."""
    return import_protocol_module(name).PROTOCOL


@dataclass
class PartyContext:
    """Everything a role function gets: its config, identity, channel and a progress hook."""

    config: Config
    role: str
    index: int
    chan: Channel
    out_dir: Path | None = None
    progress_path: Path | None = None
    _last_progress: float = field(default=0.0, repr=False)

    @property
    def name(self) -> str:
        return f"{self.role}.{self.index}"

    @property
    def section(self) -> Any:
        return self.config.section

    def rng(self, purpose: str) -> np.random.Generator:
        """A reproducible numpy generator for public or simulated data (never for secrets)."""
        return seeded_rng(self.config.seed, purpose)

    def progress(self, iteration: int, total: int | None = None) -> None:
        """Report progress to the launcher (rate-limited, cheap to call every iteration)."""
        now = time.monotonic()
        if self.progress_path is None or (now - self._last_progress < 0.25 and iteration != total):
            return
        self._last_progress = now
        tmp = self.progress_path.with_name(self.progress_path.name + ".tmp")
        tmp.write_text(f"{iteration} {total or 0} {self.chan.stats.total().rounds}\n")
        tmp.replace(self.progress_path)


def seeded_rng(seed: int, purpose: str) -> np.random.Generator:
    """numpy generator for (seed, purpose): same on every party, independent across purposes."""
    digest = hashlib.sha256(f"{seed}/{purpose}".encode()).digest()
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest[:16], "little")))
