"""The rewards waiting when an update starts go together, up to serve.max_update, whatever
serve.max_batch (which bounds a decision batch): an update's rounds cost about the same for
few rewards as for many. Before, each update took serve.max_batch at most: with max_batch 16
on the emulated WAN the updates applied 24 rewards a second, the rewards fell behind 40
decisions a second, and a stop could not drain them. Hannun's updates take a power of two
of them (the rest wait for the next): the holders' dealer material is shaped by an update's
size, and every new size waited for the dealer twice an update (85 ms on the emulated WAN)."""

from types import SimpleNamespace

from deadlines import deadline
from serve_service import PULLER, Apps, Service, records
from serve_support import wait_for

from mpcbandit.protocols.hannun.serve_puller import Puller


def _update_sizes(out) -> list[int]:
    return [len(op["ids"]) for op in records(out, PULLER, "ops.wal") if op["kind"] == "update"]


def test_the_rewards_waiting_go_in_one_update_beyond_max_batch(tmp_path):
    out = tmp_path / "svc"
    svc = Service(out, "serve.max_batch=1", "serve.max_update=64")
    apps = Apps(svc)
    ids = [f"r{k}" for k in range(24)]
    try:
        for rid in ids:
            apps.contexts(rid)
            assert apps.decide(rid)[0] == 200
        for rid in ids:   # posted at once: most wait while the first update runs
            apps.reward(rid)
        wait_for(lambda: sum(_update_sizes(out)) == len(ids), "every reward applied", deadline(60))
    finally:
        assert svc.stop() == 0
    sizes = _update_sizes(out)
    assert max(sizes) > 1, sizes
    assert all(size & (size - 1) == 0 and size <= 64 for size in sizes), sizes


def test_a_hannun_update_takes_the_largest_power_of_two_of_the_rewards_ready():
    puller = SimpleNamespace(serve=SimpleNamespace(max_update=100))
    sizes = {ready: Puller.update_size(puller, ready) for ready in range(1, 300)}
    assert sizes[1] == 1 and sizes[23] == 16 and sizes[64] == 64 and sizes[299] == 64
    assert all(size & (size - 1) == 0 and size <= min(ready, 100) < 2 * size
               for ready, size in sizes.items())
