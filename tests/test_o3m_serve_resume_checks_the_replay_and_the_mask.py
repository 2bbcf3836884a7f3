"""A resumed O3M service replays the AP's op log and checks it: a decision whose arm, or an
update whose |theta|, differs from what the AP logged (here edited) stops the resume, the AP
naming the op and the id or both values in /v1/health. A participant that lost its block of the
mask while the AP resumes a model (in that mask's coordinates) is refused by the PMG, naming
it: no new mask is dealt, nobody saves one."""

import os
import signal

import pytest

from o3m_serve_service import AP, ARMS, PASSIVE, PMG, o3m_service, o3m_serving
from serve_service import applied_rewards, records
from serve_support import wait_for

from mpcbandit.files import write_private
from mpcbandit.serve.wal import encode_record


def _refusal(svc, party: str) -> str:
    return wait_for(lambda: svc.health(party).get("reason", "").startswith("DataError")
                    and svc.health(party)["reason"], f"{party} refuses the resume")


def _rewrite(path, logged) -> None:
    write_private(path, b"".join(map(encode_record, logged)))


@pytest.mark.slow   # three starts of the service
def test_an_o3m_replay_that_differs_from_the_log_is_refused_naming_the_op(tmp_path):
    out = tmp_path / "svc"
    with o3m_serving(out) as apps:
        for k in range(4):
            apps.contexts(f"d{k}")
            assert apps.decide(f"d{k}")[0] == 200
            assert apps.reward(f"d{k}")[0] == 202
        wait_for(lambda: len(applied_rewards(out, AP)) == 4, "the four rewards applied")
        os.kill(apps.svc.pids()[PASSIVE[0]], signal.SIGKILL)   # no checkpoint at a stop
        assert apps.svc.stop() == 1
        ops = records(out, AP, "ops.wal")
        update = next(op for op in ops if op["kind"] == "update")
        kept_norm, update["theta_norm"] = update["theta_norm"], update["theta_norm"] + 1e-6
        _rewrite(out / AP / "ops.wal", ops)
        svc = apps.svc = o3m_service(out, resume=True, ready=False)
        reason = _refusal(svc, AP)
        assert f"op {update['n']} replayed: |theta|" in reason and "the replay differs" in reason
        svc.stop()
        update["theta_norm"] = kept_norm
        _rewrite(out / AP / "ops.wal", ops)
        logged = records(out, AP)
        first = next(r for r in logged if r["kind"] == "decision")
        edited = first["arm"], (first["arm"] + 1) % ARMS
        first["arm"] = edited[1]
        _rewrite(out / AP / "requests.wal", logged)
        svc = apps.svc = o3m_service(out, resume=True, ready=False)
        reason = _refusal(svc, AP)
        assert f"id {first['id']!r} got arm {edited[0]}" in reason
        assert f"says {edited[1]}" in reason and "op 1 replayed" in reason
        assert not svc.health(AP)["ready"]


def test_a_participant_that_lost_its_block_of_the_mask_is_refused_while_a_model_is_kept(
        tmp_path):
    out = tmp_path / "svc"
    with o3m_serving(out) as apps:
        for k in range(3):
            apps.contexts(f"m{k}")
            assert apps.decide(f"m{k}")[0] == 200
        assert apps.svc.stop() == 0   # every party checkpoints: the AP keeps a model
        lost = out / PASSIVE[1] / "checkpoints" / PASSIVE[1] / "mask.ckpt"
        kept = {p: (out / p / "checkpoints" / p / "mask.ckpt").read_bytes()
                for p in (AP, PASSIVE[0])}
        lost.unlink()
        svc = apps.svc = o3m_service(out, resume=True, ready=False)
        reason = _refusal(svc, PMG)
        assert f"{PASSIVE[1]} lost its block of the mask" in reason and AP in reason
        svc.stop()
    assert not lost.exists()   # no new mask was dealt: nobody saved one
    assert kept == {p: (out / p / "checkpoints" / p / "mask.ckpt").read_bytes() for p in kept}
