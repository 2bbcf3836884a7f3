"""Figures 7 and 8 sweep the secure protocol into settings where local truncation wraps: a run
the protocol stops with a named error is a row saying where and why, not the end of the sweep."""

import csv

import pytest

from mpcbandit.errors import PartyFailed, ProtocolError
from mpcbandit.experiments import hannun_secure
from mpcbandit.experiments.common import Output


def _failure(reason: str) -> PartyFailed:
    err = ProtocolError("feature_holder.0", "hannun step 1629", reason)
    return PartyFailed("feature_holder.0", "(pid 7) sent nothing (waiting): arm_puller.0, which "
                       f"waited for feature_holder.0; arm_puller.0: ProtocolError: {err}")


def test_stopped_names_the_step_and_the_reason_of_a_protocol_error():
    e = _failure("opened selection is not one-hot: [0.0, 0.0]")
    assert hannun_secure._stopped(e) == ("stopped at hannun step 1629: opened selection is not "
                                         "one-hot (from feature_holder.0)")
    assert hannun_secure._stopped(PartyFailed("dealer.0", "OSError: cannot bind")) is None


def test_sweep_keeps_going_past_a_stopped_run_and_records_it(tmp_path, monkeypatch):
    def fake_run(out, **section):
        if section["precision_bits"] == 25:
            raise _failure("opened selection is not one-hot: [0.0]")
        return {"average_reward": 0.6, "agreement_with_replay": 1.0,
                "replay_cumulative_reward": 6.0, "critical_rounds_per_step": 16}

    monkeypatch.setattr(hannun_secure, "secure_run", fake_run)
    hannun_secure._reward_sweep(Output(tmp_path), "precision_bits", [24, 25, 26], "fig", "L",
                                {"local": {"trunc": "local"}}, "synthetic", 10, "t")
    rows = list(csv.DictReader(open(tmp_path / "fig.csv")))
    assert [r["precision_bits"] for r in rows] == ["24", "25", "26"]
    assert rows[1]["average_reward"] == ""
    assert rows[1]["outcome"].startswith("stopped at hannun step 1629")
    assert rows[0]["outcome"] == rows[2]["outcome"] == "completed"


def test_sweep_does_not_hide_a_failure_that_is_not_the_protocols(tmp_path, monkeypatch):
    def fake_run(out, **section):
        raise PartyFailed("dealer.0", "OSError: cannot bind 127.0.0.1:5000")

    monkeypatch.setattr(hannun_secure, "secure_run", fake_run)
    with pytest.raises(PartyFailed, match="cannot bind"):
        hannun_secure._reward_sweep(Output(tmp_path), "precision_bits", [20], "fig", "L",
                                    {"local": {}}, "synthetic", 10, "t")
