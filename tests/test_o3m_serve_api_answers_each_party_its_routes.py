"""The API of each party of a real O3M service: a participant takes its K x d_p columns (the
count checked), the AP also decisions (200 with the arm) and rewards (any real number), the
PMG no request; duplicates are 409; a reward for no decision is 404; a decision whose columns
did not all arrive is 503 naming the participants missing (the AP's own included), and the ids
refused leave no trace in the model (the replay agrees)."""

from deadlines import deadline
from o3m_serve_service import AP, ARMS, PARTIES, PASSIVE, PMG, WIDTH, o3m_serving
from serve_service import records, replay
from serve_support import call


def test_each_o3m_party_takes_its_own_requests_and_names_what_is_missing(tmp_path):
    out = tmp_path / "svc"
    with o3m_serving(out, f"serve.decision_timeout_s={deadline(2):g}") as apps:
        svc = apps.svc
        for party in PARTIES:
            health = svc.health(party)
            assert health["ready"] is True and set(health["peers"].values()) == {"up"}, health
            status, text, _ = call(svc.urls[party], "GET", "/metrics")
            assert status == 200 and "mpcbandit_requests_total" in text
        for route, body in (("/v1/contexts", {"id": "x", "features": [0.0]}),
                            ("/v1/decisions", {"id": "x"}),
                            ("/v1/rewards", {"id": "x", "reward": 1.0})):
            status, answer, _ = svc.post(PMG, route, body)
            assert status == 404 and f"party {PMG} takes no" in answer["error"], answer
        status, answer, _ = svc.post(PASSIVE[0], "/v1/decisions", {"id": "x"})
        assert status == 404 and "pulls arms" in answer["error"], answer
        status, answer, _ = svc.post(PASSIVE[0], "/v1/rewards", {"id": "x", "reward": 1.0})
        assert status == 404 and "holds rewards" in answer["error"], answer
        status, answer, _ = svc.post(PASSIVE[0], "/v1/contexts",
                                     {"id": "x", "features": [0.5] * WIDTH})
        assert status == 400 and answer["field"] == "features", answer
        assert f"expected {ARMS * WIDTH} numbers" in answer["error"]

        apps.contexts("r1")
        assert apps.acked["contexts"] == {(p, "r1") for p in (AP, *PASSIVE)}
        status, answer, _ = apps.decide("r1")
        assert status == 200 and answer["id"] == "r1" and 0 <= answer["arm"] < ARMS, answer
        assert apps.decide("r1")[0] == 409
        assert svc.post(PASSIVE[1], "/v1/contexts", {"id": "r1", "features": [0.1] * (
            ARMS * WIDTH)})[0] == 409
        status, answer = apps.reward("r1")     # a real number: O3M takes any finite reward
        assert status == 202, answer
        assert apps.reward("r1")[0] == 409
        status, answer, _ = svc.post(AP, "/v1/rewards", {"id": "nobody", "reward": 0.5})
        assert status == 404 and "no decision is known" in answer["error"], answer

        apps.contexts("half", [AP, PASSIVE[0]])     # pp.2's columns never come
        status, answer, _ = apps.decide("half")
        assert status == 503 and answer["missing"] == [PASSIVE[1]], answer
        assert PASSIVE[1] in answer["error"]
        apps.contexts("theirs", PASSIVE)             # nor the AP's own
        status, answer, _ = apps.decide("theirs")
        assert status == 503 and answer["missing"] == [AP], answer
        apps.contexts("r2")
        assert apps.decide("r2")[0] == 200
        assert svc.stop() == 0
    own = [r for r in records(out, AP) if r["kind"] == "context"]
    assert all(len(r["features"]) == ARMS * WIDTH for r in own)  # its own columns, no others'
    report = replay(out)
    assert report["decisions"] == 2 and report["disagree"] == [] and report["rewards"] == 1
