"""`mpcbandit serve-replay` of a secret-exploration service whose dealer did not reveal every
key (hannun.reveal = "never", or not yet): a decision without its key cannot be told explored
or greedy, so its arm is checked against the greedy arm, and the count served another arm
against what exploration explains (a one-sided binomial bound at a false-alarm probability of
1e-6); a decision whose key is revealed is still checked exactly. The model is replayed
exactly either way (each reward applied to the arm served)."""

import json
import math
import os
import subprocess
import sys

import numpy as np

from conftest import REPO
from deadlines import deadline
from mpcbandit.bandits.egreedy import draw_exploration
from mpcbandit.config import load_config
from mpcbandit.files import make_private_dir, write_private
from mpcbandit.mpc.prg import Prg
from mpcbandit.protocols.hannun import serve_replay
from mpcbandit.protocols.hannun.serve_replay import (FALSE_ALARM, ScheduledReference,
                                                     off_greedy_bound)
from serve_support import LOGGED_SETS, service_logs

EPSILON = 0.3
#: LOGGED_SETS in secret exploration, exploring: the keys are the test's
SETS = [s for s in LOGGED_SETS if "exploration" not in s and "epsilon" not in s] + [
    f"hannun.epsilon={EPSILON}"]
KEYS = [os.urandom(32), os.urandom(32)]   # decisions 0..62, then 62 on (inside batch 15 of 4)
CUT = 62


def _service(tmp_path, epsilon=EPSILON, flips=()):
    """A secret-exploration service's folder (`serve --out`'s) that served 120 decisions in
    30 batches on KEYS: (its config, the folder, the arms served, each decision explored)."""
    out = tmp_path / "svc"
    schedule = [(0, CUT, KEYS[0]), (CUT, None, KEYS[1])]
    served = service_logs(out, ref=ScheduledReference(4, 6, epsilon, 20, schedule=schedule),
                          flips=flips)
    sets = [s for s in SETS if "epsilon" not in s] + [f"hannun.epsilon={epsilon}"]
    write_private(out / "run.json", json.dumps({"serve": True, "overrides": sets,
                                                "config": str(REPO / "configs/hannun-synthetic.toml")}))
    explored = np.concatenate([draw_exploration(Prg(KEYS[0]), CUT, 4, epsilon, 20).explore,
                               draw_exploration(Prg(KEYS[1]), 120 - CUT, 4, epsilon, 20).explore])
    ids = [f"b{b}-{k}" for b in range(30) for k in range(4)]
    return (load_config(REPO / "configs/hannun-synthetic.toml", sets), out, served,
            dict(zip(ids, explored.astype(bool))))


def _reveal(out, reveal: str, keys: list[tuple[int, int, bytes]]) -> None:
    """The dealer's result.json, as it writes it under hannun.reveal = reveal."""
    write_private(make_private_dir(out / "dealer.0") / "result.json", json.dumps(
        {"exploration": "secret", "reveal": reveal, "decisions": 120,
         "keys": [{"from": t, "to": end, "key": k.hex()} for t, end, k in keys]}))


def _cli(out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mpcbandit", "serve-replay", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=deadline(120))


def test_without_any_key_every_decision_is_checked_against_the_greedy_arm(tmp_path):
    cfg, out, served, explored = _service(tmp_path)
    _reveal(out, "never", [])
    report = serve_replay.replay_service(cfg, out)
    assert report["decisions"] == report["greedy_only"] == 120 and report["exact"] == 0
    assert report["reveal"] == "never" and report["disagree"] == []
    off = {o["id"] for o in report["off_greedy"]}
    # only an explored decision may leave the greedy arm; some did (the check has teeth)
    assert off and off <= {i for i, e in explored.items() if e}
    assert report["agree"] + len(off) + len(report["near_ties"]) == 120
    assert len(off) <= report["off_greedy_bound"] == off_greedy_bound(120, EPSILON, 4) == 50
    done = _cli(out)
    assert done.returncode == 0, done.stdout + done.stderr
    greedy = 120 - len(off) - len(report["near_ties"])
    assert ("120 decision(s) whose exploration key is never revealed (hannun.reveal = never): "
            "whether each explored cannot be told, so each is checked against the greedy arm "
            f"only (the model is replayed exactly all the same): {greedy} served the greedy "
            f"arm, {len(off)} another: within the 50 exploration explains") in done.stdout, \
        done.stdout
    assert "0 decision(s) checked exactly" in done.stdout


def test_decisions_whose_key_is_revealed_are_checked_exactly_the_rest_greedy_only(tmp_path):
    """A batch of decisions 60..64 spans the end of the first key (62)."""
    cfg, out, served, explored = _service(tmp_path)
    _reveal(out, "every", [(0, CUT, KEYS[0])])
    report = serve_replay.replay_service(cfg, out)
    assert report["exact"] == CUT and report["greedy_only"] == 120 - CUT
    assert report["disagree"] == []
    off = {o["id"] for o in report["off_greedy"]}
    later = [f"b{b}-{k}" for b in range(30) for k in range(4)][CUT:]
    assert off <= {i for i in later if explored[i]}
    assert "not revealed yet (hannun.reveal = every" in _cli(out).stdout
    _reveal(out, "every", [(0, CUT, KEYS[0]), (CUT, 120, KEYS[1])])
    report = serve_replay.replay_service(cfg, out)
    assert report["agree"] == report["exact"] == 120 and report["greedy_only"] == 0
    assert report["off_greedy"] == report["near_ties"] == report["disagree"] == []


def test_a_revealed_decision_served_differently_still_differs_by_name(tmp_path):
    cfg, out, _, _ = _service(tmp_path, flips={"b3-1"})
    _reveal(out, "stop", [(0, CUT, KEYS[0])])
    report = serve_replay.replay_service(cfg, out)
    assert [d["id"] for d in report["disagree"]] == ["b3-1"]
    done = _cli(out)
    assert done.returncode == 1 and "DIFFERS, id 'b3-1'" in done.stdout, done.stdout


def test_more_decisions_off_the_greedy_arm_than_exploration_explains_exit_1(tmp_path):
    ids = [f"b{b}-{k}" for b in range(30) for k in range(4)]
    cfg, out, _, _ = _service(tmp_path, epsilon=0.05, flips=set(ids))
    _reveal(out, "never", [])
    report = serve_replay.replay_service(cfg, out)
    assert report["disagree"] == [] and report["off_greedy_bound"] == 17
    assert len(report["off_greedy"]) > 17
    done = _cli(out)
    assert done.returncode == 1, done.stdout
    assert (f"{len(report['off_greedy'])} another: MORE than the 17 exploration explains"
            in done.stdout)
    first = report["off_greedy"][0]
    assert f"OFF GREEDY, id {first['id']!r}: served arm {first['served']}" in done.stdout


def test_the_bound_is_the_least_count_whose_tail_is_within_the_false_alarm():
    for n, eps, arms in [(1, 0.1, 10), (40, 0.1, 10), (120, 0.3, 4), (500, 0.05, 2),
                         (1000, 0.2, 5)]:
        p = eps * (arms - 1) / arms
        tail = lambda k: sum(math.comb(n, j) * p ** j * (1 - p) ** (n - j)  # noqa: E731
                             for j in range(k + 1, n + 1))
        k = off_greedy_bound(n, eps, arms)
        assert tail(k) <= FALSE_ALARM < tail(k - 1), (n, eps, arms, k)
    assert off_greedy_bound(0, 0.1, 10) == 0 == off_greedy_bound(100, 0.0, 10)
