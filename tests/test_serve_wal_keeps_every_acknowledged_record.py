"""Every accepted context, decision and reward is in the party's write-ahead log before it is
acknowledged; on restart the log is read back whole, a record cut short by a crash dropped."""

import os
import signal
import stat
import threading

import pytest

from deadlines import deadline
from mpcbandit.errors import DataError
from mpcbandit.files import OutputError
from mpcbandit.serve import wal as wal_module
from mpcbandit.serve.wal import WriteAheadLog, encode_record, read_records
from serve_support import LiveService, call, gate_first_fsync, start_party, wait_for


def test_a_torn_last_record_is_dropped_and_the_log_goes_on(tmp_path):
    path = tmp_path / "w" / "party.wal"
    log = WriteAheadLog(path)
    for i in range(3):
        log.append({"kind": "context", "id": f"c{i}"}).result(deadline(10))
    log.close()
    whole = path.read_bytes()
    with open(path, "ab") as f:  # a crash in the middle of writing the fourth
        f.write(encode_record({"kind": "context", "id": "c3"})[:-7])
    log = WriteAheadLog(path)
    assert log.dropped_torn_record and [r["id"] for r in log.records] == ["c0", "c1", "c2"]
    assert path.read_bytes() == whole  # cut off, so the next record follows a whole one
    log.append({"kind": "context", "id": "c4"}).result(deadline(10))
    log.close()
    assert [r["id"] for r in read_records(path)[0]] == ["c0", "c1", "c2", "c4"]


def test_a_record_damaged_before_the_last_is_refused_naming_file_and_line(tmp_path):
    path = tmp_path / "party.wal"
    lines = [encode_record({"kind": "reward", "id": f"r{i}", "reward": 1.0}) for i in range(3)]
    lines[1] = lines[1].replace(b"1.0", b"9.0")  # the CRC no longer matches
    path.write_bytes(b"".join(lines))
    path.chmod(0o600)
    with pytest.raises(DataError) as e:
        WriteAheadLog(path)
    assert str(path) in str(e.value) and "line 2" in str(e.value)


@pytest.mark.parametrize("flip", [b"1.0", b"r2"])
def test_a_whole_last_record_that_is_damaged_is_refused_not_dropped_as_torn(tmp_path, flip):
    # a bit flipped in the last record, written whole (it may have been acknowledged): not a
    # crash mid-write, which leaves no newline
    path = tmp_path / "party.wal"
    lines = [encode_record({"kind": "reward", "id": f"r{i}", "reward": 1.0}) for i in range(3)]
    lines[2] = lines[2].replace(flip, bytes([flip[0] ^ 0x04]) + flip[1:])
    path.write_bytes(b"".join(lines))
    path.chmod(0o600)
    with pytest.raises(DataError) as e:
        WriteAheadLog(path)
    assert str(path) in str(e.value) and "line 3" in str(e.value)
    assert "written whole" in str(e.value)
    assert path.read_bytes() == b"".join(lines)  # nothing cut off


def test_the_log_is_private(tmp_path):
    tmp_path.chmod(0o755)  # a folder mpcbandit did not make: its mode is left alone
    path = tmp_path / "new" / "party.wal"
    WriteAheadLog(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    shared = tmp_path / "shared.wal"
    shared.write_bytes(b"")
    shared.chmod(0o644)
    with pytest.raises(OutputError) as e:
        WriteAheadLog(shared)
    assert "0644" in str(e.value) and str(shared) in str(e.value)
    assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755


def test_concurrent_appends_share_one_fsync_and_none_is_acknowledged_before_it(tmp_path,
                                                                             monkeypatch):
    log = WriteAheadLog(tmp_path / "party.wal")
    calls, entered, release = gate_first_fsync(monkeypatch, wal_module)
    first = log.append({"kind": "context", "id": "first"})
    assert entered.wait(deadline(30))
    rest = [log.append({"kind": "context", "id": f"c{i}"}) for i in range(19)]
    assert not first.done()  # its fsync has not returned: it is not acknowledged
    release.set()
    for fut in [first, *rest]:
        fut.result(deadline(30))
    assert len(calls) == 2  # the 19 that queued during the first fsync share the second
    monkeypatch.undo()
    log.close()
    assert len(read_records(tmp_path / "party.wal")[0]) == 20


def test_a_request_is_answered_only_after_its_record_is_durable(tmp_path, monkeypatch):
    live = LiveService(tmp_path / "party.wal")
    try:
        entered, release = threading.Event(), threading.Event()
        real_fsync = os.fsync

        def gated_fsync(fd):
            entered.set()
            assert release.wait(deadline(30))
            real_fsync(fd)

        monkeypatch.setattr(wal_module.os, "fsync", gated_fsync)
        answer = {}
        poster = threading.Thread(target=lambda: answer.setdefault(
            "r", live.call("POST", "/v1/contexts", {"id": "slow-disk", "features": [1, 2]})))
        poster.start()
        assert entered.wait(deadline(30))
        poster.join(0.3)
        assert "r" not in answer  # held by the fsync
        release.set()
        poster.join(deadline(30))
        assert answer["r"][0] == 202
    finally:
        monkeypatch.undo()
        live.close()


def post_until_killed(url, kind, acked, stop):
    """Post requests one after another, recording the ids acknowledged."""
    i = 0
    while not stop.is_set():
        rid = f"{kind}-{threading.get_ident()}-{i}"
        i += 1
        try:
            if kind == "contexts":
                status = call(url, "POST", "/v1/contexts", {"id": rid, "features": [i, 0.5]},
                              timeout=deadline(10))[0]
                ok = status == 202
            else:
                status, body, _ = call(url, "POST", "/v1/decisions", {"id": rid},
                                       timeout=deadline(10))
                ok = status == 200
                if ok and call(url, "POST", "/v1/rewards", {"id": rid, "reward": 1.0},
                               timeout=deadline(10))[0] == 202:
                    acked.append(("reward", rid))
            if ok:
                acked.append(("context" if kind == "contexts" else "decision", rid))
        except OSError:
            return  # the party is gone


def test_kill_9_mid_stream_loses_nothing_acknowledged(tmp_path):
    wal = tmp_path / "run" / "party.wal"
    proc, url = start_party(tmp_path, "--wal", str(wal))
    acked, stop = [], threading.Event()
    posters = [threading.Thread(target=post_until_killed, args=(url, kind, acked, stop))
               for kind in ("contexts", "contexts", "decisions", "decisions")]
    for t in posters:
        t.start()
    try:
        wait_for(lambda: len(acked) >= 300, "300 acknowledged requests")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(deadline(30))
    finally:
        stop.set()
        for t in posters:
            t.join(deadline(30))
    records, _, _ = read_records(wal)
    logged = {(r["kind"], r["id"]) for r in records}
    assert set(acked) <= logged, sorted(set(acked) - logged)[:5]
    # restarted on the same log, the party answers as before the kill
    proc, url = start_party(tmp_path, "--wal", str(wal), name="again")
    try:
        kind, rid = next(a for a in acked if a[0] == "context")
        assert call(url, "POST", "/v1/contexts", {"id": rid, "features": [1, 2]})[0] == 409
        rid = next(rid for kind, rid in acked if kind == "decision")
        assert call(url, "POST", "/v1/decisions", {"id": rid})[0] == 409
        rid = next(rid for kind, rid in acked if kind == "reward")
        assert call(url, "POST", "/v1/rewards", {"id": rid, "reward": 0.0})[0] == 409
    finally:
        proc.terminate()
        proc.wait(deadline(60))


def test_a_log_that_cannot_write_stops_and_every_answer_names_it(tmp_path, monkeypatch):
    live = LiveService(tmp_path / "party.wal")
    try:
        def disk_full(fd, data):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(wal_module.os, "write", disk_full)
        for rid in ("f1", "f2"):
            status, body, _ = live.call("POST", "/v1/contexts", {"id": rid, "features": [1, 2]})
            assert status == 503 and "party.wal" in body["error"] and "ENOSPC" in body["error"]
        health = live.call("GET", "/v1/health")[1]
        assert health["ready"] is False and "ENOSPC" in health["reason"]
        assert live.service.queues["contexts"].depth == 0  # refused requests hold no place
    finally:
        monkeypatch.undo()
        live.close()
