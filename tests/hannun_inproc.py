"""Run the hannun protocol in-process (threads), for tests: every party's run_role on its own
Channel, optionally recording what chosen parties receive."""

from __future__ import annotations

from mpcbandit.config import load_config
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols import PartyContext, get_protocol

CONFIG = "configs/hannun-synthetic.toml"


def run_hannun(overrides: list[str], record: tuple[str, ...] = ()):
    """(config, {party: output}, {party: [(label, peer, body), ...]}, channels)."""
    cfg = load_config(CONFIG, overrides)
    proto = get_protocol("hannun")
    seen: dict[str, list] = {name: [] for name in record}

    def party(role: str, index: int):
        def fn(chan):
            name = f"{role}.{index}"
            if name in seen:
                take = chan._take

                def recording(label, peer):
                    body, nbytes = take(label, peer)
                    seen[name].append((label, peer, body))
                    return body, nbytes
                chan._take = recording
            return proto.run_role(PartyContext(config=cfg, role=role, index=index, chan=chan))
        return fn

    roles = proto.roles(cfg.section)
    fns = {f"{r}.{i}": party(r, i) for r, i in roles}
    peers = {f"{r}.{i}": proto.peers_of(cfg.section, r, i) for r, i in roles}
    results, chans = run_inproc(fns, deadline_s=60.0, peers=peers)
    return cfg, results, seen, chans
