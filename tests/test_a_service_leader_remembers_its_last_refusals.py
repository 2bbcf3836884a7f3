"""The leader of a service remembers which holders' slices were missing for its last
REFUSALS refused requests (what the shell's 503 names), not every refusal since it started."""

from mpcbandit.serve import loop as serve_loop


def test_the_refusals_remembered_are_the_last_ones(monkeypatch):
    monkeypatch.setattr(serve_loop, "REFUSALS", 3)
    backend = serve_loop.PartyBackend("arm_puller.0", [], None, None, None)
    for k in range(5):
        backend.note_refused(f"r{k}", [f"feature_holder.{k % 2}"])
    assert list(backend.refused) == ["r2", "r3", "r4"]
    assert backend.missing("r4") == ["feature_holder.0"] and backend.missing("r0") == []
