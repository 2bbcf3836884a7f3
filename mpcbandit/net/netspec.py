"""The emulated network a channel delays its messages by: a leaf, shared by config and net."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NetSpec", "NET_PRESETS"]

#: one-way delay (s) and bandwidth (bytes/s) of the named network presets
NET_PRESETS: dict[str, tuple[float, float | None]] = {
    "none": (0.0, None),
    "lan": (0.25e-3, 1e9 / 8),
    "wan": (20e-3, 100e6 / 8),
}


@dataclass(frozen=True)
class NetSpec:
    """An emulated network: one-way delay in seconds and bandwidth in bytes/s (None: unlimited)."""

    name: str
    one_way_s: float
    bytes_per_s: float | None

    @property
    def emulated(self) -> bool:
        """Whether messages are delayed or throttled at all."""
        return bool(self.one_way_s or self.bytes_per_s)
