"""A service's logs grow for months, so a party holds neither in memory: the leader's op log
keeps only how many ops it logged (a resume reads the ops it replays back from the file), and
a request log opened again is walked from its file whenever its records are read. Before,
the op log kept every op with its ids for good, and a party kept the records of its request
log read back at start for as long as it ran."""

import tracemalloc

from deadlines import deadline
from mpcbandit.serve.loop import OpLog
from mpcbandit.serve.wal import WriteAheadLog

OPS = 4000


def _ids(n: int) -> list[str]:
    return [f"request-{n:06d}-{k}" for k in range(8)]


def _grown_while(fn) -> int:
    """Bytes of Python memory still held after fn ran (tracemalloc)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = fn()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    del kept
    return grown


def test_the_op_log_holds_no_op_and_a_resume_reads_back_those_it_replays(tmp_path):
    path = tmp_path / "p" / "ops.wal"
    oplog = OpLog(path)

    def log_ops():
        futures = [oplog.append("decide" if n % 2 else "update", _ids(n))
                   for n in range(1, OPS + 1)]
        for f in futures:
            f.result(deadline(30))
        return oplog

    grown = _grown_while(log_ops)
    assert oplog.n == OPS
    oplog.close()
    assert grown < 2**20, grown   # 4,000 ops of 8 ids: 3.4 MB held before

    again = OpLog(path)   # a resume
    try:
        assert again.n == OPS
        tail = list(again.logged_after(OPS - 3))
        assert [(op["n"], op["kind"], op["ids"]) for op in tail] == [
            (n, "decide" if n % 2 else "update", _ids(n)) for n in range(OPS - 2, OPS + 1)]
        assert again.append("drop", ["x"]).result(deadline(30))["n"] == OPS + 1
    finally:
        again.close()


def test_a_request_log_opened_again_is_walked_from_disk_each_time_it_is_read(tmp_path):
    path = tmp_path / "p" / "requests.wal"
    log = WriteAheadLog(path)
    for f in [log.append({"kind": "context", "id": f"c{k}", "features": [0.25] * 8})
              for k in range(OPS)]:
        f.result(deadline(30))
    log.close()

    holder = {}

    def reopen():
        holder["log"] = WriteAheadLog(path)
        return holder["log"]

    grown = _grown_while(reopen)
    log = holder["log"]
    try:
        assert grown < 2**20, grown   # 4,000 records: 2.9 MB held before
        assert len(log.records) == OPS
        log.append({"kind": "context", "id": "after", "features": [0.5] * 8}).result(deadline(30))
        for _ in range(2):   # read twice: the records at open, not those appended since
            assert [r["id"] for r in log.records] == [f"c{k}" for k in range(OPS)]
    finally:
        log.close()
