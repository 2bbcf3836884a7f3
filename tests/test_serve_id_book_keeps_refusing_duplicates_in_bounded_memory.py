"""A party's book of request ids (409 for a duplicate, 404 unknown, 410 closed) keeps only its
recent ids in memory and the others in an index on disk beside the log, private as the log
is, made afresh from the log at every start: every id ever seen stays refused as a
duplicate, across a restart, while the book's memory does not grow with the ids. Before, it
kept a set of every id ever seen (a service's p' and p'' grew 10 to 19 MB over 10^5
requests). An index that cannot be made stops the party naming it; one that cannot be
written (a full disk) leaves the ids in memory, still refused."""

import sqlite3
import stat
import tracemalloc

import pytest

from deadlines import deadline
from mpcbandit.files import OutputError
from mpcbandit.serve import idbook
from mpcbandit.serve.idbook import IdBook
from mpcbandit.serve.wal import WriteAheadLog

IDS = 40_000


def _id(k: int) -> str:
    return f"request-{k:08d}-of-some-application"


def _records():
    """A log's records: every id's context, decision and reward; one in ten closed instead."""
    for k in range(IDS):
        rid = _id(k)
        yield {"kind": "context", "id": rid}
        yield {"kind": "decision", "id": rid, "arm": 1, "step": k, "at": 1.0}
        yield {"kind": "expired" if k % 10 == 0 else "reward", "id": rid, "at": 2.0}


def _answers(book: IdBook, k: int) -> tuple:
    rid = _id(k)
    return (book.claim(book.contexts, rid), book.claim(book.requested, rid),
            book.reward_state(rid))


def test_every_id_seen_stays_refused_while_the_books_memory_stays_bounded(tmp_path):
    tracemalloc.start()
    try:
        book = IdBook(tmp_path / "party.ids")
        start = tracemalloc.get_traced_memory()[0]
        book.replay(_records())
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    # 40,000 ids of 35 characters in three sets: 9.4 MB before
    assert grown < 4 * 2**20, grown
    for k in (0, 1, 17, IDS // 2, IDS - 1):
        assert _answers(book, k) == (False, False, "closed" if k % 10 == 0 else "rewarded")
        assert not book.claim_reward(_id(k))
    assert book.claim(book.contexts, "a new one") and book.reward_state("a new one") == "unknown"


def test_a_claim_taken_back_or_restarted_gives_the_same_answers(tmp_path):
    index = tmp_path / "state" / "requests.ids"
    log = WriteAheadLog(tmp_path / "state" / "requests.wal")
    book = IdBook(index, spill=8)
    for k in range(50):   # most of them spilled to the index on disk
        record = {"kind": "context", "id": _id(k)}
        assert book.claim(book.contexts, _id(k))
        log.append(record).result(deadline(10))
    book.forget(book.contexts, _id(3))     # its request failed after all: on disk by now
    book.forget(book.contexts, _id(49))    # and one still in memory
    assert book.claim(book.contexts, _id(3)) and book.claim(book.contexts, _id(49))
    log.close()
    assert stat.S_IMODE(index.stat().st_mode) == 0o600   # ids are the application's data
    again = IdBook(index, spill=8)   # a restart: made afresh from what is durable
    log = WriteAheadLog(tmp_path / "state" / "requests.wal")
    again.replay(log.records)
    log.close()
    assert not any(again.claim(again.contexts, _id(k)) for k in range(50))
    assert again.claim(again.contexts, _id(50))


def test_an_index_that_cannot_be_made_is_refused_naming_it(tmp_path):
    blocked = tmp_path / "requests.ids"
    blocked.mkdir()   # something else where the index goes
    with pytest.raises(OutputError) as e:
        IdBook(blocked)
    assert str(blocked) in str(e.value) and "index of request ids" in str(e.value)


def test_ids_the_index_cannot_take_stay_refused_from_memory_until_it_can(tmp_path,
                                                                         monkeypatch, caplog):
    book = IdBook(tmp_path / "requests.ids", spill=8)
    put = idbook._DiskIndex.put

    def disk_full(*_):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(idbook._DiskIndex, "put", disk_full)
    for k in range(20):
        assert book.claim(book.contexts, _id(k))
    assert "database or disk is full" in caplog.text and "kept in memory" in caplog.text
    monkeypatch.setattr(idbook._DiskIndex, "put", put)   # the disk has room again
    for k in range(20, 40):
        assert book.claim(book.contexts, _id(k))
    assert len(book.contexts.recent) < 8          # moved to the index once it could
    assert not any(book.claim(book.contexts, _id(k)) for k in range(40))
