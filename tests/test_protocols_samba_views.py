"""What each SAMBA party sees (Fig. 7): the Controller only ciphertexts, Comp only masked
scores in a uniformly random order, DC only the sum; tampering is caught by AES-GCM."""

from __future__ import annotations

import struct

import pytest

from deadlines import deadline
from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.samba.protocol import BIT_CT, SCORE_CT, plaintext, run_inproc_samba
from tests.samba_support import Recorder, samba_config

# chi-square critical values at p = 0.001, by degrees of freedom (no scipy)
CHI2_999 = {1: 10.828, 2: 13.816, 3: 16.266, 4: 18.467, 5: 20.515, 6: 22.458, 7: 24.322}


def _recording(names):
    logs = {n: [] for n in names}
    return logs, {n: (lambda chan, n=n: Recorder(chan, logs[n])) for n in names}


def _contains_clear_values(body) -> bool:
    if isinstance(body, (float, bool)):
        return True
    if isinstance(body, dict):
        return any(_contains_clear_values(v) for v in body.values())
    if isinstance(body, list):
        return any(_contains_clear_values(v) for v in body)
    return False


def test_controller_sees_only_aes_gcm_and_paillier_ciphertexts():
    k = 4
    cfg = samba_config(algorithm="ucb", budget=120, arms=k)
    logs, wrap = _recording(["controller.0"])
    view: list = []
    out = run_inproc_samba(cfg, wrap=wrap, comp_view=view)
    log = logs["controller.0"]
    setup = [b for label, p, b in log if label == "setup"]
    assert len(setup) == 1 and set(setup[0]) == {"budget", "algorithm", "params", "paillier_n"}
    n = setup[0]["paillier_n"]
    core = [(p, b) for label, p, b in log if label in ("core", "permuted")]
    assert core, "no per-step traffic recorded"
    for peer, body in core:
        assert isinstance(body, bytes), (peer, type(body))
        size = BIT_CT * k if peer == "comp.0" else SCORE_CT
        assert len(body) == size, (peer, len(body))
    items = [b for p, b in core if p != "comp.0"]
    assert len(set(items)) == len(items)  # randomized: no repeated ciphertext
    sums = [b for label, p, b in log if label == "sum"]
    assert len(sums) == k and all(isinstance(c, int) and 0 < c < n * n for c in sums)
    keys = [b for label, p, b in log if label == "key"]
    assert all(not _contains_clear_values(b) for b in keys)
    # no masked score Comp decrypted appears in clear anywhere in the Controller's view
    blob = b"".join(b for _, b in core)
    for _, _, values, _ in view[:50]:
        for v in values:
            assert struct.pack("<d", v) not in blob
    assert out["cumulative_reward"] == sum(out["series"]["rewards"])


def test_comp_sees_masked_scores_and_a_uniform_position_of_the_pulled_arm():
    k, budget = 5, 1505
    cfg = samba_config(algorithm="ucb", budget=budget, arms=k)
    logs, wrap = _recording(["comp.0"])
    view: list = []
    run_inproc_samba(cfg, wrap=wrap, comp_view=view)
    assert len(view) == budget - k
    for label, peer, body in logs["comp.0"]:
        if label == "permuted":
            assert isinstance(body, bytes) and len(body) == k * SCORE_CT
    counts = [0] * k
    for _, _, _, pos in view:
        counts[pos] += 1
    expected = len(view) / k
    chi2 = sum((c - expected) ** 2 / expected for c in counts)
    assert chi2 < CHI2_999[k - 1], counts
    # UCB's best arm dominates the pulls, yet Comp cannot tell where it is
    ref = plaintext(cfg)
    assert max(ref["series"]["arms"].count(i) for i in range(k)) > 0.4 * budget
    # true UCB scores lie in (0, 1 + sqrt(2 ln N)]; the masks spread them over decades
    tops = [max(values) for _, _, values, _ in view]
    assert min(tops) < 1e-2 and max(tops) > 1e2


def test_data_client_learns_only_the_sum():
    cfg = samba_config(algorithm="softmax", budget=150, arms=4)
    logs, wrap = _recording(["dc.0"])
    out = run_inproc_samba(cfg, wrap=wrap)
    (label, peer, total), = logs["dc.0"]
    assert (label, peer) == ("sum", "controller.0") and isinstance(total, int)
    assert out["cumulative_reward"] == plaintext(cfg)["cumulative_reward"]


def _flip_last_byte(body: bytes) -> bytes:
    return body[:-1] + bytes([body[-1] ^ 1])


def test_tampered_score_is_rejected_by_comp_naming_the_controller():
    cfg = samba_config(algorithm="ucb", budget=60, arms=3)
    sent = {"n": 0}

    def tamper(label, peer, body):
        if label == "permuted" and peer == "comp.0" and isinstance(body, bytes):
            sent["n"] += 1
            if sent["n"] == 10:
                return _flip_last_byte(body)
        return body

    wrap = {"controller.0": lambda chan: Recorder(chan, [], tamper)}
    with pytest.raises(ProtocolError) as err:
        run_inproc_samba(cfg, wrap=wrap, deadline_s=deadline(5.0))
    assert err.value.peer == "controller.0" and "AES-GCM" in str(err.value)
    assert "t=13" in err.value.tag  # the 10th step after the K = 3 initial pulls


def test_tampered_bit_is_rejected_by_the_data_owner_naming_the_controller():
    cfg = samba_config(algorithm="epsilon-greedy", budget=60, arms=3)

    def tamper(label, peer, body):
        if label == "core" and peer == "do.1" and isinstance(body, bytes):
            return _flip_last_byte(body)
        return body

    wrap = {"controller.0": lambda chan: Recorder(chan, [], tamper)}
    with pytest.raises(ProtocolError) as err:
        run_inproc_samba(cfg, wrap=wrap, deadline_s=deadline(5.0))
    assert err.value.peer == "controller.0" and "AES-GCM" in str(err.value)


def test_replayed_score_from_an_earlier_step_is_rejected():
    cfg = samba_config(algorithm="ucb", budget=40, arms=3)
    first: dict = {}

    def replay(label, peer, body):
        if label == "permuted" and peer == "comp.0" and isinstance(body, bytes):
            first.setdefault("blob", body)
            return first["blob"]
        return body

    wrap = {"controller.0": lambda chan: Recorder(chan, [], replay)}
    with pytest.raises(ProtocolError, match="AES-GCM"):
        run_inproc_samba(cfg, wrap=wrap, deadline_s=deadline(5.0))


def test_unknown_algorithm_in_the_set_up_is_rejected_naming_the_sender():
    cfg = samba_config(algorithm="ucb", budget=30, arms=3)

    def forge(label, peer, body):
        if label == "setup" and peer == "controller.0":
            return {**body, "algorithm": "no-such-bandit"}
        return body

    with pytest.raises(ProtocolError) as err:
        run_inproc_samba(cfg, wrap={"dc.0": lambda chan: Recorder(chan, [], forge)},
                         deadline_s=deadline(5.0))
    assert err.value.peer == "dc.0" and "no-such-bandit" in str(err.value)
