"""A service's state folders keep their secrets sealed (each checkpoint encrypted under a key of
the party's CURVE secret key, which is in run.keys_dir, not in the folder): the dealer's next,
unrevealed exploration key and an O3M participant's block of the mask are in no file of any
state folder in clear, nor in any party's replay bundle; the service resumes from the sealed
checkpoints, and serve-replay on the bundles reports as on the service's folder."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from o3m_serve_service import PARTIES as O3M_PARTIES, PASSIVE, o3m_service, o3m_serving
from serve_service import (PARTIES, Apps, Service, checkpoint_state, decide_in_waves, records,
                           replay, running)

DEALER = "dealer.0"


def _holding(root, secret: bytes) -> list[str]:
    """Every file under root that holds secret, raw or in hex."""
    marks = [secret, secret.hex().encode(), secret.hex().upper().encode()]
    return sorted(str(p) for p in root.rglob("*") if p.is_file()
                  and any(m in p.read_bytes() for m in marks))


def _bundled(out, parties, gathered):
    """Every party's bundle of the service in out, made as its organisation would."""
    for party in parties:
        done = CliRunner().invoke(main, ["serve-bundle", "--state", str(out / party),
                                         "--out", str(gathered / party)])
        assert done.exit_code == 0, done.output
    return gathered


def _replay_bundles(out, gathered) -> dict:
    """serve-replay on the bundles, with the config and options of the launcher's record."""
    meta = json.loads((out / "run.json").read_text())
    sets = [a for o in meta["overrides"] for a in ("--set", o)]
    done = CliRunner().invoke(main, ["serve-replay", str(gathered), "--config", meta["config"],
                                     *sets, "--json"])
    assert done.exit_code == 0, done.output
    return json.loads(done.output)


@pytest.mark.slow   # a service started twice
def test_the_dealers_unrevealed_key_is_sealed_kept_out_of_bundles_and_resumed(tmp_path):
    out = tmp_path / "svc"
    with running(Apps(Service(out, "hannun.epsilon=0.3"), seed=4)) as apps:
        decide_in_waves(apps, [f"s{k}" for k in range(24)], np.random.default_rng(2), workers=8)
        assert apps.svc.stop() == 0
        (_, used), (after, unrevealed) = checkpoint_state(out, DEALER, "keys")
        assert after == 24
        assert _holding(out, used) and not _holding(out / DEALER / "checkpoints", used)
        assert _holding(tmp_path, unrevealed) == []   # nowhere: sealed in its store
        gathered = _bundled(out, PARTIES, tmp_path / "gathered")
        assert _holding(gathered / DEALER, used)      # revealed: the replay reads it
        assert _replay_bundles(out, gathered) == replay(out)
        # resumed from the sealed store: the key of decisions 24.. is the one kept
        apps.svc = Service(out, resume=True)
        decide_in_waves(apps, [f"r{k}" for k in range(8)], np.random.default_rng(3), workers=8)
        assert apps.svc.stop() == 0
    keys = checkpoint_state(out, DEALER, "keys")
    assert [(t, bytes(k)) for t, k in keys[:2]] == [(0, used), (24, unrevealed)]
    report = replay(out)
    assert report["decisions"] == report["exact"] == report["agree"] == 32


@pytest.mark.slow   # a service started twice
def test_a_participants_block_of_the_mask_is_sealed_kept_out_of_bundles_and_resumed(tmp_path):
    out = tmp_path / "svc"
    with o3m_serving(out) as apps:
        for k in range(6):
            apps.contexts(f"d{k}")
            assert apps.decide(f"d{k}")[0] == 200
            assert apps.reward(f"d{k}")[0] == 202
        assert apps.svc.stop() == 0
        blocks = {p: np.asarray(checkpoint_state(out, p, "mask"), dtype=np.float64)
                  for p in PASSIVE}
        gathered = _bundled(out, O3M_PARTIES, tmp_path / "gathered")
        for p, q in blocks.items():
            assert _holding(tmp_path, q.tobytes()) == [], p
            assert _holding(tmp_path, q[0].tobytes()) == [], p
        assert _replay_bundles(out, gathered) == replay(out)
        apps.svc = o3m_service(out, resume=True)
        apps.contexts("after")
        assert apps.decide("after")[0] == 200
        assert apps.svc.stop() == 0
    for p, q in blocks.items():   # the same block, unsealed again on resume
        assert np.array_equal(np.asarray(checkpoint_state(out, p, "mask")), q)
    assert replay(out)["disagree"] == [] and "after" in {
        r["id"] for r in records(out, "ap.0") if r["kind"] == "decision"}
