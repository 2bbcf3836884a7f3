"""A Hannun service's dealer reveals its secret exploration keys as `hannun.reveal` says, and
says at every stop what it revealed (its log at INFO, the launcher's stop lines):

- ``never`` (the default): no key is written anywhere outside the dealer's own checkpoint
  store, and serve-replay checks the greedy decisions only;
- ``stop``: every key used so far in result.json at the stop, a fresh key for what follows;
  serve-replay checks every decision exactly;
- ``every``: a fresh key every reveal_every decisions, each revealed while the service runs
  once its decisions are all decided; serve-replay checks those exactly, the rest greedy only.
"""

import json

import numpy as np

from serve_service import Apps, Service, checkpoint_state, decide_in_waves, replay
from serve_support import wait_for

DEALER = "dealer.0"
#: exploring often, so that a check that cannot tell an explored decision is tried
EXPLORING = "hannun.epsilon=0.3"


def _dealer_keys(out) -> list[tuple[int, bytes]]:
    """The dealer's key schedule as its checkpoint store holds it (sealed: unsealed here)."""
    return [(int(t), bytes(k)) for t, k in checkpoint_state(out, DEALER, "keys")]


def _files_holding(root, key: bytes, but) -> list[str]:
    """Every file under root (but the one given) that holds key, raw or in hex."""
    marks = [key, key.hex().encode(), key.hex().upper().encode()]
    return sorted(str(p) for p in root.rglob("*") if p.is_file() and p != but
                  and any(m in p.read_bytes() for m in marks))


def _result(out) -> dict:
    return json.loads((out / DEALER / "result.json").read_text())


def _serve(out, *sets, ids: list[str], workers: int = 8) -> tuple[Service, Apps]:
    """A service of `sets` that decided ids (`workers` at a time: batches straddle key
    boundaries), their rewards posted."""
    svc = Service(out, EXPLORING, *sets)
    apps = Apps(svc, seed=4)
    try:
        decide_in_waves(apps, ids, np.random.default_rng(2), workers=workers, wave=4 * workers)
    except BaseException:
        svc.stop()
        raise
    return svc, apps


def test_under_never_no_key_is_written_and_the_replay_checks_the_greedy_decisions(tmp_path):
    out = tmp_path / "svc"
    svc, apps = _serve(out, "hannun.reveal=never", ids=[f"n{k}" for k in range(48)])
    assert svc.stop() == 0
    keys = _dealer_keys(out)
    assert len(keys) == 1   # kept, not renewed: nothing of it was revealed
    assert _files_holding(tmp_path, keys[0][1], but=None) == []   # its store sealed too
    said = ("exploration key not revealed (hannun.reveal = never), 48 decision(s) so far: "
            "serve-replay checks the greedy decisions only")
    assert _result(out)["keys"] == [] and _result(out)["said"] == said
    assert said in (out / "logs" / f"{DEALER}.log").read_text()
    assert f"[mpcbandit] {DEALER}: {said}" in svc.log.read_text()
    report = replay(out)
    assert report["decisions"] == report["greedy_only"] == 48 and report["exact"] == 0
    assert report["disagree"] == [] and report["reveal"] == "never"
    assert len(report["off_greedy"]) <= report["off_greedy_bound"]
    assert report["agree"] + len(report["off_greedy"]) + len(report["near_ties"]) == 48


def test_under_stop_the_keys_used_are_revealed_at_the_stop_and_a_fresh_one_follows(tmp_path):
    out = tmp_path / "svc"
    svc, apps = _serve(out, "hannun.reveal=stop", ids=[f"s{k}" for k in range(32)])
    assert svc.stop() == 0
    (first, key), (after, fresh) = _dealer_keys(out)
    assert (first, after) == (0, 32) and fresh != key
    assert _result(out)["keys"] == [{"from": 0, "to": 32, "key": key.hex()}]
    assert f"[mpcbandit] {DEALER}: revealed the exploration key(s) of decisions 0..32" \
        in svc.log.read_text()
    report = replay(out)
    assert report["decisions"] == report["exact"] == report["agree"] == 32
    assert report["greedy_only"] == 0 and report["disagree"] == report["near_ties"] == []


def test_under_every_each_key_is_revealed_once_its_decisions_are_decided(tmp_path):
    out, every, n = tmp_path / "svc", 256, 2 * 256 + 40
    svc, apps = _serve(out, "hannun.reveal=every", f"hannun.reveal_every={every}",
                       ids=[f"e{k}" for k in range(n)], workers=16)
    try:
        # while the service runs: the keys of decisions 0..512, each its own, none of 512..
        wait_for(lambda: (out / DEALER / "result.json").exists()
                 and _result(out)["keys"][-1:] and _result(out)["keys"][-1]["to"] == 2 * every,
                 "the keys of decisions 0..512 revealed")
        revealed = _result(out)["keys"]
        schedule = _dealer_keys(out)
        assert [(k["from"], k["to"]) for k in revealed] == [(0, every), (every, 2 * every)]
        assert [k["key"] for k in revealed] == [k.hex() for _, k in schedule[:2]]
        assert len({k for _, k in schedule}) == len(schedule) and schedule[2][0] == 2 * every
    finally:
        assert svc.stop() == 0
    assert _result(out)["keys"] == revealed   # the stop reveals no unfinished key
    said = _result(out)["said"]
    assert said.startswith("revealed the exploration keys of decisions 0..512 in ") and \
        "the key of decisions 512..552 is revealed once its 256 decisions are decided" in said
    assert f"[mpcbandit] {DEALER}: {said}" in svc.log.read_text()
    report = replay(out)
    assert report["decisions"] == n and report["exact"] == 2 * every
    assert report["greedy_only"] == n - 2 * every
    assert report["disagree"] == [] and report["reveal"] == "every"
    # the 512 decisions with their key agree exactly, explored or not; of the other 40, any off
    # the greedy arm is within what exploration explains
    assert all(tie["greedy_only"] for tie in report["near_ties"])
    assert report["agree"] == n - len(report["off_greedy"]) - len(report["near_ties"])
    assert len(report["off_greedy"]) <= report["off_greedy_bound"]
