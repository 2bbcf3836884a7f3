"""A request wakes a waiting thread of the shell only when that thread has something new to
do: the backend when its batch's first request came or its batch is full (not at every
request within the window), the log's commit thread when a new group starts (not for every
record queued behind a running fsync). A wake-up per request cost the service a thread switch
and the GIL per request (`mpcbandit bench serve`, docs/measurements/serve-cpu.md)."""

from deadlines import deadline
from mpcbandit.serve import wal as wal_module
from mpcbandit.serve.batching import BatchQueue
from mpcbandit.serve.wal import WriteAheadLog
from serve_support import gate_first_fsync, take_once_waiting


def _count_calls(obj, name: str) -> list:
    calls, real = [], getattr(obj, name)

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    setattr(obj, name, counted)
    return calls


def test_requests_within_the_window_wake_the_backend_only_when_its_batch_is_full():
    queue = BatchQueue("decisions", limit=100)
    queue.reserve()
    queue.put("d0")
    taker, taken = take_once_waiting(queue, max_items=10, window_s=60.0, wait_s=60.0)
    wakes = _count_calls(queue._cond, "notify_all")
    for i in range(1, 9):   # within the (long) window, the batch not full: nothing new to do
        queue.reserve()
        queue.put(f"d{i}")
    assert wakes == [] and taker.is_alive()
    queue.reserve()
    queue.put("d9")         # the batch is full: the backend takes it at once
    taker.join(deadline(30))
    assert len(wakes) == 1 and taken["batch"].items == [f"d{i}" for i in range(10)]


def test_records_queued_behind_a_running_fsync_wake_the_commit_thread_once(tmp_path,
                                                                         monkeypatch):
    log = WriteAheadLog(tmp_path / "party.wal")
    _, entered, release = gate_first_fsync(monkeypatch, wal_module)
    first = log.append({"kind": "context", "id": "first"})
    assert entered.wait(deadline(30))   # the commit thread is in the first group's fsync
    wakes = _count_calls(log._cond, "notify")
    rest = [log.append({"kind": "context", "id": f"c{i}"}) for i in range(19)]
    assert len(wakes) == 1    # the second group's first record; the others join it
    release.set()
    for fut in [first, *rest]:
        fut.result(deadline(30))
    monkeypatch.undo()
    log.close()
