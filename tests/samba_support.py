"""Shared helpers of the samba tests: a config builder and a channel that records traffic."""

from __future__ import annotations

from pathlib import Path

from mpcbandit.config import load_config

REPO = Path(__file__).resolve().parents[1]
SYNTHETIC = REPO / "configs" / "samba-synthetic.toml"


def samba_config(**overrides):
    """The synthetic samba config with samba.<key>=value overrides (small Paillier keys; seeds
    from the config seed, so a run equals --plaintext, unless fresh_seeds=True)."""
    sets = {"paillier_bits": 256, "insecure_small_keys": True, "fresh_seeds": False, **overrides}
    return load_config(SYNTHETIC, [f"samba.{k}={_toml(v)}" for k, v in sets.items()])


def _toml(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, str) else str(v)


class Recorder:
    """A Channel wrapper that logs (label, sender, body) of every message received."""

    def __init__(self, chan, log: list, tamper=None):
        self._chan, self.log, self._tamper = chan, log, tamper

    def __getattr__(self, name):
        return getattr(self._chan, name)

    def exchange(self, label, send=None, recv=(), *, deadline_s=None):
        if send and self._tamper:
            send = {p: self._tamper(label, p, b) for p, b in send.items()}
        out = self._chan.exchange(label, send=send, recv=recv, deadline_s=deadline_s)
        self.log.extend((label, p, b) for p, b in out.items())
        return out

    def send(self, label, peer, body):
        self.exchange(label, send={peer: body})

    def recv(self, label, peer, *, deadline_s=None):
        return self.exchange(label, recv=(peer,), deadline_s=deadline_s)[peer]
