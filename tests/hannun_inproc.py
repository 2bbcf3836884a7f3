"""Run the hannun protocol in-process (threads), for tests: every party's run_role on its own
Channel, optionally recording what chosen parties receive."""

from __future__ import annotations

from deadlines import deadline
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

                def recording(label, key):  # key: (sender, tag)
                    body, nbytes = take(label, key)
                    seen[name].append((label, key[0], body))
                    return body, nbytes
                chan._take = recording
            return proto.run_role(PartyContext(config=cfg, role=role, index=index, chan=chan))
        return fn

    roles = proto.roles(cfg.section)
    fns = {f"{r}.{i}": party(r, i) for r, i in roles}
    peers = {f"{r}.{i}": proto.peers_of(cfg.section, r, i) for r, i in roles}
    results, chans = run_inproc(fns, deadline_s=deadline(60), peers=peers)
    return cfg, results, seen, chans


#: the least agreement of a secret-exploration run with the float64 replay of its key. Each run
#: meets its own fixed-point near-ties, where the secure run may pick the other arm: 53 runs of
#: the default config (1000 steps) measured 47 exact, 5 at 0.995-0.999 and one at 0.986.
SECRET_AGREEMENT = 0.97


def assert_matches_replay(summary: dict, least: float = SECRET_AGREEMENT) -> None:
    """The run's arms agree with the replay of its dealer's key, and its reward differs from
    the replay's by at most one per differing step (rewards lie in [0, 1])."""
    agreement = summary["agreement_with_replay"]
    assert agreement >= least, agreement
    differing = round((1 - agreement) * summary["steps"])
    assert abs(summary["cumulative_reward"] - summary["replay_cumulative_reward"]) <= differing
