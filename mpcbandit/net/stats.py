"""Round and byte accounting, per party and per operation label."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["OpStats", "RoundStats"]


@dataclass
class OpStats:
    """Counts for one op label: each exchange is one round."""

    rounds: int = 0
    messages: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    compute_s: float = 0.0
    wait_s: float = 0.0

    def __iadd__(self, other: "OpStats") -> "OpStats":
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))
        return self

    def __sub__(self, other: "OpStats") -> "OpStats":
        return OpStats(**{f.name: getattr(self, f.name) - getattr(other, f.name) for f in fields(self)})

    @property
    def bytes(self) -> int:
        return self.bytes_sent + self.bytes_received

    def to_dict(self) -> dict:
        return asdict(self)


class RoundStats:
    """Per-op-label OpStats of one party; always on."""

    def __init__(self) -> None:
        self.by_op: dict[str, OpStats] = {}

    def op(self, label: str) -> OpStats:
        """The (mutable) counters of label."""
        s = self.by_op.get(label)
        if s is None:
            s = self.by_op[label] = OpStats()
        return s

    def total(self) -> OpStats:
        """Sum over every label."""
        t = OpStats()
        for s in self.by_op.values():
            t += s
        return t

    def to_dict(self) -> dict:
        return {label: s.to_dict() for label, s in sorted(self.by_op.items())}
