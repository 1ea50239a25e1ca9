"""Delete Thread writes what real Mastra's Memory.deleteThread leaves (@mastra/memory 1.31.0 over @mastra/libsql
1.23.1, with a LibSQLVector on the same file): the same rows in every mastra_* table and in the vector index.

Cases: a thread with vectors (the semantic fixture), a thread with thread-scope OM generations (support), a
thread of a resource-scope record (resource: the shared record stays), and owned / foreign reminder threads
planted as Mastra names them (`subconscious:<id>:remind`; owned = same resource and
`metadata.subconsciousRemindParentThreadId`), which Mastra deletes only when owned.
"""

from __future__ import annotations

import json
import shutil

import libsql
import pytest

from studio.app.thread_writes import delete_thread
from studio.store.writes import WriteSession
from tests.conftest import copy_fixture
from tests.interop.conftest import dump_tables, run_node


def _vectors(path) -> dict:
    """{index table: sorted [(vector_id, metadata, embedding hex)]} of every vector index, read without its ANN."""
    conn = libsql.connect(f"file:{path}?mode=ro")
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                             "AND sql LIKE '%F32_BLOB%'").fetchall()]
        return {t: sorted(conn.execute(f'SELECT vector_id, metadata, hex(embedding) FROM "{t}" NOT INDEXED')
                          .fetchall()) for t in tables}
    finally:
        conn.close()


def _plant_reminders(path) -> None:
    conn = libsql.connect(str(path))
    now = "2026-12-04T21:00:00.000Z"
    for tid, resource, parent in (("subconscious:support-2:remind", "user-alice", "support-2"),
                                  ("subconscious:support-3:remind", "user-elsewhere", "support-3")):
        conn.execute('INSERT INTO mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt") '
                     "VALUES (?, ?, 'reminders', ?, ?, ?)",
                     (tid, resource, json.dumps({"subconsciousRemindParentThreadId": parent}), now, now))
        conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                     "VALUES (?, ?, ?, 'user', 'v2', ?, ?)",
                     (f"msg-{tid}", tid, json.dumps({"format": 2, "parts": [{"type": "text", "text": "remind"}]}),
                      now, resource))
    conn.commit()
    conn.close()


CASES = [("semantic", "sem-lisbon", False), ("support", "support-1", False), ("resource", "res-b", False),
         ("support", "support-2", True), ("support", "support-3", True)]


@pytest.mark.parametrize(("fixture", "thread_id", "reminders"), CASES)
def test_delete_thread_equals_mastra(tmp_path, mastra_corpus, fixture, thread_id, reminders):
    base = copy_fixture(fixture, tmp_path / "base")
    if reminders:
        _plant_reminders(base)
    theirs, ours = tmp_path / "mastra.db", tmp_path / "ours.db"
    for dest in (theirs, ours):
        shutil.copyfile(base, dest)
    before = dump_tables(base)
    run_node(mastra_corpus, "studio-memory-delete-thread.mjs", theirs, thread_id)
    (tmp_path / "backups").mkdir()
    written = delete_thread(str(ours), thread_id, session=WriteSession(backup_dir=tmp_path / "backups"))

    mastra_rows, our_rows = dump_tables(theirs), dump_tables(ours)
    assert our_rows == mastra_rows
    assert _vectors(ours) == _vectors(theirs)
    # not vacuous: Mastra deleted the thread and everything named after it
    assert thread_id in before["mastra_threads"] and thread_id not in mastra_rows["mastra_threads"]
    gone_messages = set(before["mastra_messages"]) - set(mastra_rows["mastra_messages"])
    assert gone_messages and written.result["messages"] == len(gone_messages)
    assert written.result["threads"] == len(set(before["mastra_threads"]) - set(mastra_rows["mastra_threads"]))
    om_gone = len(before.get("mastra_observational_memory", {})) - len(mastra_rows.get("mastra_observational_memory",
                                                                                       {}))
    assert written.result["om_records"] == om_gone
    if fixture == "semantic":
        assert written.result["vectors"] > 0
    if fixture == "resource":
        assert om_gone == 0   # the resource's shared record stays
    survivor = next(t for t in sorted(our_rows["mastra_threads"]) if not t.startswith("subconscious:"))
    report = run_node(mastra_corpus, "continue.mjs", ours, survivor, "1")   # Mastra carries on in the store
    assert report["ok"] is True, report
    if reminders:
        owned = f"subconscious:{thread_id}:remind"
        assert (owned in mastra_rows["mastra_threads"]) is (thread_id == "support-3")   # support-3's is foreign
        assert written.changes.threads_deleted == frozenset(written.result["thread_ids"])


def test_undo_of_delete_thread_restores_every_vector(tmp_path):
    """Undo of a delete on semantic.db puts back every row, vectors included (journaled by `vector_id`: a
    LibSQLVector table's `id SERIAL` is NULL in every row), with their rowids, and libSQL's ANN index finds all of
    them again."""
    from studio.store.writes import undo_write

    path = copy_fixture("semantic", tmp_path)
    before_rows, before_vectors = dump_tables(path), _vectors(path)
    done = WriteSession().delete_thread(str(path), "sem-lisbon")
    assert done["vectors"] > 0 and _vectors(path) != before_vectors
    undone = undo_write(str(path))
    assert undone["reinserted"] == done["messages"] + done["threads"] + done["vectors"]
    assert dump_tables(path) == before_rows and _vectors(path) == before_vectors
    conn = libsql.connect(str(path))
    try:
        probe = conn.execute("SELECT embedding FROM memory_messages_64 NOT INDEXED LIMIT 1").fetchone()[0]
        found = conn.execute("SELECT id FROM vector_top_k('memory_messages_64_vector_idx', ?, 1000)",
                             (probe,)).fetchall()
        total = conn.execute("SELECT count(*) FROM memory_messages_64 NOT INDEXED").fetchone()[0]
    finally:
        conn.close()
    assert len(found) == total
