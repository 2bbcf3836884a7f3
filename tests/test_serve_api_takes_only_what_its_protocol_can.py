"""What a party's API takes is its protocol's to say (ServiceRole): a context slice whose norm
is above the bound is a 400 naming `features`, a reward outside the values taken a 400 naming
`reward`; a decision the backend refuses because a slice is missing is a 503 that names the
holder (`missing`); a decision replayed at a resume, whose request is gone, is logged and its id
taken (409)."""

from serve_support import FakeBackend, LiveService, wait_for

from mpcbandit.serve.service import ServiceRole
from mpcbandit.serve.wal import read_records


class _Refusing(FakeBackend):
    """Refuses every decision: feature_holder.1's slice is missing."""

    def _pull(self, kind):
        while not self.port.drained(kind):
            batch = self.port.next_batch(kind, wait_s=0.05)
            for item in (batch.items if batch and kind == "decisions" else ()):
                item.refuse("the slice of feature_holder.1 did not arrive", ["feature_holder.1"])


def test_a_slice_above_the_norm_bound_and_a_reward_outside_the_values_are_400(tmp_path):
    role = ServiceRole("p.0", features=2, decides=True, rewards=True, max_norm=1.0,
                       reward_values=(0.0, 1.0))
    live = LiveService(tmp_path / "p.wal", role=role)
    try:
        status, body, _ = live.call("POST", "/v1/contexts", {"id": "a", "features": [0.8, 0.7]})
        assert status == 400 and body["field"] == "features" and "norm 1.06" in body["error"]
        assert live.call("POST", "/v1/contexts", {"id": "a", "features": [0.6, 0.8]})[0] == 202
        assert live.call("POST", "/v1/decisions", {"id": "a"})[0] == 200
        status, body, _ = live.call("POST", "/v1/rewards", {"id": "a", "reward": 0.5})
        assert status == 400 and body["field"] == "reward" and "0 or 1" in body["error"]
        assert live.call("POST", "/v1/rewards", {"id": "a", "reward": 1})[0] == 202
    finally:
        live.close()


def test_a_refusal_for_a_missing_slice_names_the_holder(tmp_path):
    live = LiveService(tmp_path / "p.wal", backend=_Refusing())
    try:
        status, body, _ = live.call("POST", "/v1/decisions", {"id": "r"})
        assert status == 503 and body["missing"] == ["feature_holder.1"]
        assert "feature_holder.1" in body["error"]
    finally:
        live.close()


def test_a_decision_replayed_without_its_request_is_logged_and_its_id_taken(tmp_path):
    live = LiveService(tmp_path / "p.wal")
    try:
        live.service.record_decision("gone-request", 3, 17)
        wait_for(lambda: any(r.get("id") == "gone-request" and r["arm"] == 3 for r in
                             read_records(tmp_path / "p.wal")[0]), "the decision logged")
        assert live.call("POST", "/v1/decisions", {"id": "gone-request"})[0] == 409
        assert live.call("POST", "/v1/rewards", {"id": "gone-request", "reward": 1})[0] == 202
    finally:
        live.close()
