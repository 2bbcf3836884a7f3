"""Each organisation's application talks to its own party over HTTP/JSON: every route and
status of the API, through a real HTTP client, against the fake backend."""

import json
import threading

import pytest

from deadlines import deadline
from mpcbandit.serve.service import ServiceRole
from serve_support import FakeBackend, LiveService, arm_for, serve_section, wait_for


@pytest.fixture
def party(tmp_path):
    live = LiveService(tmp_path / "wal" / "party.wal")
    yield live
    live.close()


def test_a_context_is_accepted_once_and_a_duplicate_is_refused_by_name(party):
    status, body, _ = party.call("POST", "/v1/contexts", {"id": "r1", "features": [0.5, -1]})
    assert (status, body) == (202, {"id": "r1"})
    status, body, _ = party.call("POST", "/v1/contexts", {"id": "r1", "features": [0.5, -1]})
    assert status == 409 and "'r1'" in body["error"] and body["id"] == "r1"
    wait_for(lambda: party.backend.batches_of("contexts"), "the context reaches the backend")
    assert party.backend.batches_of("contexts") == [["r1"]]


def test_a_decision_is_answered_with_the_backends_arm(party):
    status, body, _ = party.call("POST", "/v1/decisions", {"id": "q7"})
    assert (status, body) == (200, {"id": "q7", "arm": arm_for("q7")})
    status, body, _ = party.call("POST", "/v1/decisions", {"id": "q7"})
    assert status == 409 and "'q7'" in body["error"]


def test_a_reward_is_accepted_for_a_decided_id_once(party):
    party.call("POST", "/v1/decisions", {"id": "d1"})
    status, body, _ = party.call("POST", "/v1/rewards", {"id": "d1", "reward": 1})
    assert (status, body) == (202, {"id": "d1"})
    status, body, _ = party.call("POST", "/v1/rewards", {"id": "d1", "reward": 0.0})
    assert status == 409 and "'d1'" in body["error"]
    wait_for(lambda: party.backend.batches_of("rewards"), "the reward reaches the backend")


def test_a_reward_for_an_id_never_decided_is_404_naming_it(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(decision_timeout_s=0.2))
    try:
        status, body, _ = live.call("POST", "/v1/rewards", {"id": "nobody", "reward": 1.0})
        assert status == 404 and "'nobody'" in body["error"] and body["id"] == "nobody"
    finally:
        live.close()


def test_a_reward_that_arrives_before_its_decision_is_known_waits_for_it(tmp_path):
    """The reward holder learns of a decision through its backend; an application that posts
    the reward as soon as the puller answered may be a little ahead of that."""
    role = ServiceRole("reward_holder.0", rewards=True)
    live = LiveService(tmp_path / "p.wal", role=role, backend=FakeBackend(["rewards"]))
    try:
        answer = {}
        poster = threading.Thread(target=lambda: answer.setdefault(
            "r", live.call("POST", "/v1/rewards", {"id": "early", "reward": 2.5})))
        poster.start()
        wait_for(lambda: live.service.rewards.waiters.get("early"), "the reward waits")
        live.backend.port.decided(["early"])
        poster.join(deadline(30))
        assert answer["r"][:2] == (202, {"id": "early"})
    finally:
        live.close()


def test_a_reward_after_its_decision_was_closed_is_410(tmp_path):
    live = LiveService(tmp_path / "p.wal", serve=serve_section(reward_timeout_s=0.05))
    try:
        assert live.call("POST", "/v1/decisions", {"id": "slow"})[0] == 200
        wait_for(lambda: "slow" in live.service.book.closed, "the decision is closed")
        status, body, _ = live.call("POST", "/v1/rewards", {"id": "slow", "reward": 1.0})
        assert status == 410 and "'slow'" in body["error"] and "reward_timeout_s" in body["error"]
        wait_for(lambda: live.backend.batches_of("rewards"), "the closure reaches the backend")
        assert live.backend.batches_of("rewards")[0] == ["slow"]
    finally:
        live.close()


BAD = [
    (b"{not json", "body"),
    (b"[1, 2]", "body"),
    (b'{"id": "x", "features": [NaN, 1]}', "body"),
    (b'{"id": "x", "features": [1e400, 1]}', "features[0]"),
    (b'{"id": "x", "features": [1, "2"]}', "features[1]"),
    (b'{"id": "x", "features": [true, 1]}', "features[0]"),
    (b'{"id": "x", "features": [1, 2, 3]}', "features"),
    (b'{"id": "x", "features": 1}', "features"),
    (b'{"id": 5, "features": [1, 2]}', "id"),
    (b'{"id": "", "features": [1, 2]}', "id"),
    (b'{"features": [1, 2]}', "id"),
    (b'{"id": "x", "features": [1, 2], "user": "alice"}', "user"),
    (b"\xff\xfe", "body"),
    (b"[" * 4000, "body"),                               # deeper than the decoder goes
    (b'{"id": "x", "features": ' + b"[" * 4000, "body"),
]


@pytest.mark.parametrize("raw,field", BAD)
def test_a_bad_context_body_is_400_naming_the_field(party, raw, field):
    status, body, _ = party.call("POST", "/v1/contexts", raw=raw)
    assert status == 400 and body["field"] == field, body
    assert f"'{field}'" in body["error"]


def test_the_feature_count_refused_is_the_partys_declared_one(party):
    status, body, _ = party.call("POST", "/v1/contexts", {"id": "x", "features": [1.0]})
    assert status == 400 and "expected 2 numbers" in body["error"] and "got 1" in body["error"]


@pytest.mark.parametrize("path,raw,field", [
    ("/v1/rewards", b'{"id": "x", "reward": "1"}', "reward"),
    ("/v1/rewards", b'{"id": "x", "reward": -Infinity}', "body"),
    ("/v1/rewards", b'{"id": "x"}', "reward"),
    ("/v1/decisions", b'{"id": ["x"]}', "id"),
    ("/v1/decisions", b'{"id": "a\\u0000b"}', "id"),
])
def test_a_bad_decision_or_reward_body_is_400_naming_the_field(party, path, raw, field):
    status, body, _ = party.call("POST", path, raw=raw)
    assert status == 400 and body["field"] == field, body


def test_an_oversize_body_is_400_naming_the_body(party):
    raw = json.dumps({"id": "big", "features": [0.1] * 100_000}).encode()
    status, body, _ = party.call("POST", "/v1/contexts", raw=raw)
    assert status == 400 and body["field"] == "body" and "larger" in body["error"]


def test_a_route_this_party_does_not_serve_is_404_saying_where_to_send(tmp_path):
    role = ServiceRole("feature_holder.0", features=2)
    live = LiveService(tmp_path / "p.wal", role=role, backend=FakeBackend(["contexts"]))
    try:
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "x"})
        assert status == 404 and "feature_holder.0 takes no decision" in body["error"]
        status, body, _ = live.call("POST", "/v1/rewards", {"id": "x", "reward": 1})
        assert status == 404 and "holds rewards" in body["error"]
        status, body, _ = live.call("GET", "/v2/anything")
        assert status == 404 and "/v2/anything" in body["error"]
        status, body, _ = live.call("GET", "/v1/contexts")
        assert status == 405
    finally:
        live.close()


def test_health_is_not_ready_until_the_backend_says_so(tmp_path):
    backend = FakeBackend(ready=False, peers={"feature_holder.1": "waiting"})
    live = LiveService(tmp_path / "p.wal", backend=backend)
    try:
        status, body, _ = live.call("GET", "/v1/health")
        assert status == 200 and body["ready"] is False and body["step"] == 0
        assert body["peers"] == {"feature_holder.1": "waiting"}
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "early"})
        assert status == 503 and "not ready" in body["error"]
        backend.port.report(ready=True, peers={"feature_holder.1": "up"})
        assert live.call("POST", "/v1/decisions", {"id": "later"})[0] == 200
        body = live.call("GET", "/v1/health")[1]
        assert body == {"ready": True, "peers": {"feature_holder.1": "up"}, "step": 1}
    finally:
        live.close()


def test_metrics_count_requests_decisions_batches_latency_costs_and_queues(party):
    party.call("POST", "/v1/contexts", {"id": "c", "features": [1, 2]})
    party.call("POST", "/v1/contexts", {"id": "c", "features": [1, 2]})
    party.call("POST", "/v1/decisions", {"id": "m1"})
    status, text, headers = party.call("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    for line in ['mpcbandit_requests_total{route="/v1/contexts",status="202"} 1.0',
                 'mpcbandit_requests_total{route="/v1/contexts",status="409"} 1.0',
                 'mpcbandit_requests_total{route="/v1/decisions",status="200"} 1.0',
                 "mpcbandit_decisions_total 1.0",
                 # the arm mix: the fake backend's arm for m1
                 f'mpcbandit_decisions_by_arm_total{{arm="{arm_for("m1")}"}} 1.0',
                 "mpcbandit_rewards_pending 1.0",
                 'mpcbandit_decision_latency_seconds_count 1.0',
                 'mpcbandit_op_rounds_total{op="decide"} 16.0',
                 'mpcbandit_op_bytes_sent_total{op="decide"} 1000.0',
                 'mpcbandit_queue_depth{kind="decisions"} 0.0']:
        assert line in text, line
    assert 'mpcbandit_batch_size_count{kind="decisions"} 1.0' in text


def _metric(text: str, series: str) -> float:
    return float(next(line.rsplit(" ", 1)[1] for line in text.splitlines()
                      if line.startswith(series + " ")))


def test_metrics_split_a_decisions_time_into_its_stages_within_its_latency(tmp_path):
    held = FakeBackend(hold=True)
    live = LiveService(tmp_path / "party.wal", backend=held)
    try:
        asked = [threading.Thread(target=live.call, args=("POST", "/v1/decisions",
                                                          {"id": f"m{k}"})) for k in range(3)]
        for t in asked:
            t.start()
        wait_for(lambda: held.batches_of("decisions"), "a decision batch taken")
        threading.Event().wait(0.2)   # the backend holds its batch this long
        held.release()
        for t in asked:
            t.join(deadline(10))
        wait_for(lambda: len(held.batches_of("decisions")) and sum(
            len(b) for b in held.batches_of("decisions")) == 3, "three decisions")
        _, text, _ = live.call("GET", "/metrics")
    finally:
        live.close()
    stage = 'mpcbandit_decision_stage_seconds_{}{{stage="{}"}}'
    for name in ("queued", "rounds", "log"):
        assert _metric(text, stage.format("count", name)) == 3, name
    assert 'stage="words"' not in text   # the fake backend has no words stage: none is made up
    held_s = _metric(text, stage.format("sum", "rounds"))
    parts = sum(_metric(text, stage.format("sum", s)) for s in ("queued", "rounds", "log"))
    latency = _metric(text, "mpcbandit_decision_latency_seconds_sum")
    assert held_s >= 0.2   # the first batch alone was held 0.2 s
    assert held_s <= parts <= latency


def test_a_backend_stage_that_does_not_exist_is_refused_by_name(party):
    with pytest.raises(ValueError, match="'queue'.*words"):
        party.service.report_stage("queue", 0.1)
    with pytest.raises(ValueError, match="'log'"):   # the shell's own, not the backend's
        party.service.report_stage("log", 0.1)


def test_metrics_give_the_mean_reward_over_any_window(party):
    for rid, reward in (("w1", 0.5), ("w2", -0.25)):
        assert party.call("POST", "/v1/decisions", {"id": rid})[0] == 200
        assert party.call("POST", "/v1/rewards", {"id": rid, "reward": reward})[0] == 202
    text = party.call("GET", "/metrics")[1]
    assert _metric(text, "mpcbandit_rewards_total") == 2.0
    assert _metric(text, "mpcbandit_reward_sum") == 0.25
