"""The dealer's exploration keys of a Hannun service and what it reveals of them, as
``hannun.reveal`` says (docs/serve.md, "The exploration stream and its key").

The stream is cut into segments, each drawn from its own key: (first decision, key), kept in
the dealer's checkpoint store, since holders resumed from a checkpoint take the same stream
again. A revealed key goes to the dealer's result.json (as a batch run's result reveals its
key), which is what serve-replay reads:

- ``never``: no key is written out: p' cannot learn which decisions explored, ever;
- ``stop``: at each stop every key used so far, and a fresh key for the decisions after it;
- ``every``: a fresh key every ``reveal_every`` decisions (at its multiples), each revealed once
  every decision it covers is decided (the lead holder says how far that is).

Seeded exploration's key derives from the config seed, which every party holds: nothing is
written, and the policy does not apply.
"""

from __future__ import annotations

import json
import logging
import os

from mpcbandit.bandits.egreedy import exploration_key
from mpcbandit.files import write_json
from mpcbandit.protocols.hannun.stream import KeySchedule

__all__ = ["ServiceKeys", "KEYS"]

log = logging.getLogger("mpcbandit.serve")

KEYS = "keys"   # the schedule's name in the dealer's checkpoint store


class ServiceKeys:
    """The dealer's key schedule (``schedule``, a KeySchedule for its ExplorationPusher) and
    its reveal policy; ``decided`` and ``stopped`` reveal what the policy allows."""

    def __init__(self, state, s, seed: int):
        self.state, self.s = state, s
        self.policy = s.reveal if s.exploration == "secret" else "seeded"
        every = s.reveal_every if self.policy == "every" else 0
        if state.store.path(KEYS).exists():
            keys = [(int(t), bytes(k)) for t, k in state.load(KEYS)]
        else:  # a new service
            keys = [(0, exploration_key(seed) if self.policy == "seeded" else os.urandom(32))]
            state.store.save(KEYS, keys)
        self.schedule = KeySchedule(keys, every, self._fresh)
        self.revealed = self._revealed_before()

    def _fresh(self, first: int) -> bytes:
        """A new key from decision `first` on, kept before any block of it leaves (holders
        resumed from a checkpoint take those blocks again)."""
        key = os.urandom(32)
        self.state.store.save(KEYS, sorted([*self.schedule.keys, (first, key)]))
        return key

    def _revealed_before(self) -> int:
        """The decisions whose keys an earlier reveal covered (result.json), 0 if none."""
        try:
            keys = json.loads(self.state.result_path.read_text())["keys"]
            return max((int(k["to"]) for k in keys), default=0)
        except (OSError, ValueError, KeyError, TypeError):
            return 0   # none yet (or unreadable: the next reveal writes it whole again)

    def _segments(self, upto: int) -> list[tuple[int, int, bytes]]:
        """(first, end, key) of the segments that end by decision `upto`."""
        out = []
        for first, _ in list(self.schedule.keys):
            start, end, key = self.schedule.segment(first)
            if end is not None and end <= upto:
                out.append((start, end, key))
        return out

    def _write(self, decisions: int, keys: list[tuple[int, int, bytes]], said: str) -> None:
        write_json(self.state.result_path, {
            "exploration": self.s.exploration, "reveal": self.policy, "decisions": decisions,
            "keys": [{"from": t, "to": end, "key": k.hex()} for t, end, k in keys],
            "said": said})

    def decided(self, t: int) -> None:
        """Every decision before t is decided: under ``every``, reveal each key that covers
        only such decisions (once)."""
        if self.policy != "every":
            return
        keys = self._segments(t)
        covered = max((end for _, end, _ in keys), default=0)
        if covered > self.revealed:
            self.revealed = covered
            self._write(t, keys, self._said(t))
            log.info("revealed the exploration keys of decisions 0..%d in %s (hannun.reveal = "
                     "every)", covered, self.state.result_path)

    def stopped(self, t: int) -> str:
        """The service stopped after t decisions: reveal what the policy says (result.json),
        under ``stop`` draw a fresh key for what follows; the line that says what was done."""
        if self.policy == "stop":
            used = [(first, k) for first, k in self.schedule.keys if first < t]
            ends = [first for first, _ in used[1:]] + [t]
            keys = [(first, end, k) for (first, k), end in zip(used, ends)]
            if used:   # what follows the stop stays secret
                self.schedule.keys = used + [(t, os.urandom(32))]
                self.state.store.save(KEYS, self.schedule.keys)
        elif self.policy == "every":
            # a service resumed from an earlier checkpoint keeps what it revealed before
            keys = self._segments(max(t, self.revealed))
            self.revealed = max([self.revealed, *(end for _, end, _ in keys)])
        else:
            keys = []
        said = self._said(t)
        self._write(t, keys, said)
        return said

    def _said(self, t: int) -> str:
        """One line: the policy, and what of decisions 0..t a replay can check exactly."""
        path = self.state.result_path
        if self.policy == "seeded":
            return ("exploration seeded: its key derives from the config seed, which every "
                    "party holds (hannun.reveal does not apply, no key written): serve-replay "
                    "checks every decision")
        if self.policy == "never":
            return (f"exploration key not revealed (hannun.reveal = never), {t} decision(s) "
                    "so far: serve-replay checks the greedy decisions only")
        if t == 0 and not self.revealed:
            return f"no decision yet, no exploration key revealed (hannun.reveal = {self.policy})"
        if self.policy == "stop":
            return (f"revealed the exploration key(s) of decisions 0..{t} in {path} "
                    f"(hannun.reveal = stop), a fresh key from decision {t} on: serve-replay "
                    "checks every decision up to this stop")
        every = self.s.reveal_every
        return (f"revealed the exploration keys of decisions 0..{self.revealed} in {path} "
                f"(hannun.reveal = every, a key every {every} decisions); the key of decisions "
                f"{self.revealed}..{t} is revealed once its {every} decisions are decided: "
                "serve-replay checks those greedy only"
                if self.revealed < t else
                f"revealed the exploration keys of decisions 0..{self.revealed} in {path} "
                f"(hannun.reveal = every, a key every {every} decisions): serve-replay checks "
                "every decision")
