"""Opening to one party: the others' views hold only their own shares and masked values."""

import numpy as np

from chi2util import top_bits_uniform
from mpcbandit.mpc.local import run_engines


def spy(eng, log):
    """Record every body this party receives, by label."""
    real = eng.chan.exchange

    def exchange(label, send=None, recv=(), **kw):
        got = real(label, send=send, recv=recv, **kw)
        for peer, body in got.items():
            log.setdefault(label, []).append((peer, body))
        return got

    eng.chan.exchange = exchange


def test_open_to_one_party_leaks_nothing_to_the_others():
    secret = np.zeros(20000)  # a constant: anything non-uniform in a view would betray it
    views = {}

    def fn(eng):
        log = views.setdefault(eng.me, {})
        spy(eng, log)
        x = eng.input(secret if eng.lead else None, "compute.0")
        y = eng.mul(x, x)                       # opens x − a and x − b: masked values only
        eng.open_to(y, "compute.1")
        return eng.open_to(x, "arm.0")

    def arm(eng):
        log = views.setdefault(eng.me, {})
        spy(eng, log)
        return eng.open_to(None, "arm.0")

    res, chans = run_engines(fn, 3, others={"arm.0": arm})
    assert np.array_equal(res["arm.0"], secret)
    # parties other than the target receive nothing under open_to
    for p in ("compute.0", "compute.2"):
        assert "open_to" not in views[p]
        assert chans[p].stats.op("open_to").bytes_received == 0
    # the target receives each other party's share: each looks uniform on its own
    got = views["compute.1"]["open_to"]
    assert sorted(p for p, _ in got) == ["compute.0", "compute.2"]
    for _, body in got:
        assert top_bits_uniform(np.asarray(body[0]["v"], dtype=np.uint64))
    # masked Beaver openings (x − a, x − b) and the truncation's x + r are uniform although
    # x is the constant 0
    for p in ("compute.0", "compute.1", "compute.2"):
        assert len(views[p]["mul"]) == 2 * 2          # 2 rounds x 2 peers
        for _, body in views[p]["mul"]:
            masked = np.asarray(body[0], dtype=np.uint64)   # x − a and x − b packed, or x + r
            assert masked.size in (20000, 40000)
            assert top_bits_uniform(masked)
    # the arm-puller got shares from every computing party and nothing else
    assert set(views["arm.0"]) == {"open_to"}
