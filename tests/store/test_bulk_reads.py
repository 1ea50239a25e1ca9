"""Reads that make thousands of records at once (issue 28: listThreads with every thread's metadata read,
recall, listMessages) give the very records the row-by-row reads gave.

A SQLite result is decoded a column at a time (`decode_all`), damaged text looked for once in all the
values, and listed threads parse their stored metadata a block of neighbours at a time. Each is checked
against the row-by-row form on a real Mastra file (the `support` fixture), damaged as
tests/store/test_damaged_text.py damages it, with cells of every SQLite type.
"""

from __future__ import annotations

import math
import pickle
import sqlite3

from studio.store import open_store, records
from studio.store.backends import decode_all
from studio.store.memory_store import MESSAGE_COLUMNS, message_reader, messages_from_rows
from studio.store.records import parse_json
from studio.store.thread_list import list_threads
from tests.store.test_damaged_text import damage

#: Stored metadata beside the fixture's JSONB: text JSON, malformed text, empty text, NULL, odd JSON values.
ODD_METADATA = ["{not json", "", None, ' {"a": 1} ', "[1,2]", '"s"', "1e400", '{"a":"\\ud800"}', "{}x"]


def _add_threads(path, count: int) -> None:
    """Copy the fixture's threads COUNT times under new ids, every third with one of ODD_METADATA."""
    with sqlite3.connect(path) as conn:
        base = conn.execute('SELECT "resourceId", title, metadata, "createdAt", "updatedAt" FROM mastra_threads'
                            ).fetchall()
        for n in range(count):
            resource, title, metadata, created, updated = base[n % len(base)]
            stored = ODD_METADATA[n // 3 % len(ODD_METADATA)] if n % 3 == 0 else metadata
            conn.execute('INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt") '
                         "VALUES (?, ?, ?, ?, ?, ?)", (f"copy-{n}", resource, title, stored, created, updated))


def _types(rows) -> list[list[type]]:
    return [[type(v) for v in r] for r in rows]


def test_a_result_decoded_at_once_equals_each_row_decoded(fixture_db):
    path = fixture_db("support")
    _add_threads(path, 6)
    targets = damage(path)  # a title and a message's content not UTF-8
    with sqlite3.connect(path) as conn:  # a blob that is not text amid text, NULLs amid text
        for n, title in enumerate([5, 2.5, b"\x00\xff", "plain"]):  # (numbers stored as text: TEXT affinity)
            conn.execute("UPDATE mastra_threads SET title = ? WHERE id = ?", (title, f"copy-{n}"))
        conn.execute('UPDATE mastra_messages SET "resourceId" = NULL WHERE rowid % 3 = 0')
    with open_store(path) as store:
        for table, lazy in [("mastra_threads", None), ("mastra_messages", "content"),
                            ("mastra_observational_memory", None), ("mastra_resources", None)]:
            present, fetched, decode = store.backend.select(table, [], "", (), lazy=lazy)
            each = [tuple(decode(r)) for r in fetched]
            at_once = decode_all(decode, fetched)
            assert fetched and at_once == each and _types(at_once) == _types(each), table
        titles = {t.id: t.title for t in store.list_threads()}
        assert [titles[f"copy-{n}"] for n in range(4)] == ["5", "2.5", "\x00\ufffd", "plain"]  # TEXT affinity
        assert titles[targets["thread"]] == "Trip \ufffd plan"

        present, fetched, decode = store.backend.select("mastra_messages", MESSAGE_COLUMNS, "", (), lazy="content")
        read = message_reader(present, decode, store.backend.encoding)
        made = messages_from_rows(present, fetched, decode, store.backend.encoding)
        assert made == [read(r) for r in fetched]
        assert [m.id for m in made if m.damaged_text] == [targets["message"]]
        # without the damaged message: the road that makes each Message directly
        clean = [r for r in fetched if decode(r)[present.index("id")] != targets["message"]]
        assert messages_from_rows(present, clean, decode, store.backend.encoding) == [read(r) for r in clean]


def test_listed_threads_parse_their_metadata_one_block_at_a_time(fixture_db, monkeypatch):
    path = fixture_db("support")
    _add_threads(path, 150)
    calls: list[int] = []
    parse_many = records.parse_json_many
    monkeypatch.setattr(records, "parse_json_many", lambda values: calls.append(len(values)) or parse_many(values))
    block = records.METADATA_BLOCK
    with open_store(path) as store:
        stored = {r["id"]: r["metadata"] for r in store.select_rows("mastra_threads")}
        threads = list_threads(store, per_page=False).threads
        assert len(threads) > 2 * block and {t.id for t in threads} == set(stored)
        unread = pickle.dumps(threads)

        middle = threads[block + 1]
        assert repr((middle.metadata, middle.metadata_error)) == repr(parse_json(stored[middle.id]))
        assert calls == [block]  # its block alone, once
        neighbour = pickle.dumps(threads[block + 2])  # its block parsed, itself not read yet
        for thread in threads:
            assert repr((thread.metadata, thread.metadata_error)) == repr(parse_json(stored[thread.id])), thread.id
        assert len(calls) == math.ceil(len(threads) / block) and sum(calls) == len(threads)
        assert any(t.metadata_error for t in threads) and any(t.metadata is None and not t.metadata_error
                                                              for t in threads)
        assert pickle.loads(unread) == threads and pickle.loads(neighbour) == threads[block + 2]


def test_a_threads_digest_is_the_same_however_its_block_was_read(fixture_db):
    """The results cache keys a thread by a digest of its row (studio.app.thread_results): reading one listed
    thread's metadata parses its neighbours' too, and their digests must not change for it."""
    from studio.app import thread_results

    path = fixture_db("support")
    _add_threads(path, 10)
    with open_store(path) as store:
        ids = [t.id for t in store.list_threads()]
        unread = thread_results.thread_digests(store, ids)
        threads = store.list_threads()
        assert threads[0].metadata is not None or threads[0].metadata_error is None  # its block parsed
        read = thread_results.thread_digests(store, ids, {t.id: t for t in threads})
        assert {t for t in ids if read[t] != unread[t]} <= {threads[0].id}  # its own read form aside
        assert all(unread.values())
