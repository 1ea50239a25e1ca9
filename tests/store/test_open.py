"""Opening real and broken databases: read-only, WAL-safe, clear errors."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path

import libsql
import pytest

from studio.errors import SchemaError, StoreError
from studio.store import open_store
from studio.store.target import file_target
from tests.conftest import FIXTURE_NAMES, load_oracle, make_plain_sqlite
from tests.oracle_facts import current_generation


def digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_open_lists_same_threads_as_mastra(fixture_db, name):
    path = fixture_db(name)
    oracle = load_oracle(name)
    with open_store(path) as store:
        for resource_id, data in oracle["resources"].items():
            threads = store.list_threads(resource_id)
            assert [t.id for t in threads] == [t["id"] for t in data["threads"]]
            for ours, theirs in zip(threads, data["threads"], strict=True):
                assert ours.title == theirs["title"]
                assert ours.metadata == theirs["metadata"]
                assert ours.created_at == theirs["createdAt"]
                assert ours.updated_at == theirs["updatedAt"]
        for thread_id, data in oracle["threads"].items():
            msgs = store.list_messages(thread_id)
            assert [m.id for m in msgs] == [m["id"] for m in data["messages"]]
            assert [m.role for m in msgs] == [m["role"] for m in data["messages"]]
            assert [m.created_at for m in msgs] == [m["createdAt"] for m in data["messages"]]


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_open_and_close_leave_main_file_and_wal_byte_identical(fixture_db, name):
    path = fixture_db(name)
    wal = Path(str(path) + "-wal")
    before = (digest(path), digest(wal), wal.exists())
    with open_store(path) as store:
        store.list_threads(with_counts=True)
        for key in store.om_lookup_keys():
            store.om_history(key["lookupKey"])
    assert (digest(path), digest(wal), wal.exists()) == before


def test_live_wal_rows_are_read(fixture_db):
    """live/support keeps its newest rows only in the -wal: they must be visible read-only."""
    path = fixture_db("live/support")
    wal = Path(str(path) + "-wal")
    assert wal.stat().st_size > 0
    # What the main file alone holds (the WAL removed in a scratch copy) is less than what we read.
    scratch = path.parent / "main-only.db"
    scratch.write_bytes(path.read_bytes())
    with sqlite3.connect(scratch) as plain:
        main_only = plain.execute("SELECT COUNT(*) FROM mastra_messages").fetchone()[0]
    oracle = load_oracle("live/support")
    expected = sum(len(t["messages"]) for t in oracle["threads"].values())
    with open_store(path) as store:
        assert sum(store.message_counts().values()) == expected
    assert main_only < expected


def test_jsonb_text_and_null_metadata_side_by_side(tmp_path):
    path = tmp_path / "mixed.db"
    conn = libsql.connect(str(path))
    conn.execute('CREATE TABLE mastra_threads (id TEXT PRIMARY KEY, "resourceId" TEXT, title TEXT, metadata TEXT, '
                 '"createdAt" TEXT, "updatedAt" TEXT)')
    conn.execute('CREATE TABLE mastra_messages (id TEXT PRIMARY KEY, thread_id TEXT, content TEXT, role TEXT, '
                 'type TEXT, "createdAt" TEXT, "resourceId" TEXT)')
    conn.execute("INSERT INTO mastra_threads VALUES ('a','r','A', jsonb('{\"k\":1}'), "
                 "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')")
    conn.execute("INSERT INTO mastra_threads VALUES ('b','r','B', '{\"k\":2}', "
                 "'2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z')")
    conn.execute("INSERT INTO mastra_threads VALUES ('c','r','C', NULL, "
                 "'2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z')")
    conn.execute("INSERT INTO mastra_threads VALUES ('d','r','D', '{broken', "
                 "'2026-01-04T00:00:00.000Z', '2026-01-04T00:00:00.000Z')")
    conn.execute("INSERT INTO mastra_messages VALUES ('m1','a','{not json','user','v2','2026-01-01T00:00:01.000Z','r')")
    conn.commit()
    conn.close()
    with open_store(path) as store:
        threads = {t.id: t for t in store.list_threads()}
        assert threads["a"].metadata == {"k": 1}
        assert threads["b"].metadata == {"k": 2}
        assert threads["c"].metadata is None and threads["c"].metadata_error is None
        assert threads["d"].metadata is None and "malformed JSON" in threads["d"].metadata_error
        [msg] = store.list_messages("a")
        assert msg.content == "{not json" and "malformed JSON" in msg.content_error
        assert msg.text == "{not json"


def test_missing_path(tmp_path):
    with pytest.raises(StoreError, match="No such file"):
        open_store(tmp_path / "nope.db")


def test_directory(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        open_store(tmp_path)


def test_empty_file(tmp_path):
    p = tmp_path / "empty.db"
    p.write_bytes(b"")
    with pytest.raises(StoreError, match="empty"):
        open_store(p)
    assert p.read_bytes() == b""


def test_not_sqlite(tmp_path):
    p = tmp_path / "notes.db"
    p.write_text("hello, this is a text file\n" * 10)
    before = p.read_bytes()
    with pytest.raises(StoreError, match="not a SQLite database"):
        open_store(p)
    assert p.read_bytes() == before


def test_sqlite_without_mastra_tables(tmp_path):
    p = make_plain_sqlite(tmp_path / "other.db")
    before = p.read_bytes()
    with pytest.raises(SchemaError, match="no Mastra tables"):
        open_store(p)
    assert p.read_bytes() == before


def test_mastra_tables_without_messages_table(tmp_path):
    p = tmp_path / "partial.db"
    with sqlite3.connect(p) as c:
        c.execute('CREATE TABLE mastra_threads (id TEXT, "resourceId" TEXT, "createdAt" TEXT)')
    with pytest.raises(SchemaError, match="mastra_messages"):
        open_store(p)


def test_older_schema_without_buffering_columns(fixture_db, tmp_path):
    """A Mastra file of an older schema (OM table without buffered* columns and metadata) still opens."""
    src = fixture_db("support")
    p = tmp_path / "old.db"
    conn = libsql.connect(str(p))
    conn.execute(f"ATTACH DATABASE 'file:{src}?mode=ro' AS src")
    for table in ("mastra_threads", "mastra_messages", "mastra_resources"):
        conn.execute(f"CREATE TABLE {table} AS SELECT * FROM src.{table}")
    keep = ['id', 'lookupKey', 'scope', 'resourceId', 'threadId', 'activeObservations', 'originType', 'config',
            'generationCount', 'lastObservedAt', 'lastReflectionAt', 'pendingMessageTokens', 'totalTokensObserved',
            'observationTokenCount', 'isObserving', 'isReflecting', 'observedMessageIds', 'createdAt', 'updatedAt']
    cols = ", ".join(f'"{c}"' for c in keep)
    conn.execute(f"CREATE TABLE mastra_observational_memory AS SELECT {cols} FROM src.mastra_observational_memory")
    conn.commit()
    conn.execute("DETACH DATABASE src")
    conn.close()
    with open_store(p) as store:
        assert not store.schema.has_buffering
        rec = store.om_current("thread:support-1")
        assert rec.generation_count == current_generation("support", "thread:support-1")
        assert rec.buffered_chunks == []
        assert rec.get("bufferedObservationChunks") is None


def test_database_locked_by_a_writer(fixture_db, monkeypatch):
    """A rollback-journal database under another process's exclusive lock gives a clear 'locked' error.

    The lock must come from another process: POSIX locks taken by the same process never conflict.
    """
    import subprocess
    import sys

    import studio.store.connection as connection

    monkeypatch.setattr(connection, "BUSY_TIMEOUT_MS", 200)
    path = fixture_db("history")  # a copy, switched to rollback journal so a writer blocks readers
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA journal_mode=DELETE")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); sys.stdin.readline()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = digest(path)
        with pytest.raises(StoreError, match="locked by another process"), open_store(path) as store:
            store.list_threads()
        assert digest(path) == before
    finally:
        holder.communicate("\n", timeout=10)


def test_reads_while_wal_writer_holds_lock(fixture_db):
    """In WAL mode (as Mastra runs) a reader is not blocked by a writer's open transaction."""
    path = fixture_db("support")
    writer = libsql.connect(str(path))
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("UPDATE mastra_threads SET title = 'changing' WHERE id = 'support-1'")
    try:
        with open_store(path) as store:
            assert store.get_thread("support-1").title != "changing"
    finally:
        writer.rollback()
        writer.close()


def test_file_url_and_remote_url():
    assert file_target("file:///tmp/x%20y.db").path == Path("/tmp/x y.db")
    assert file_target("file:rel.db?mode=rw").path == Path("rel.db")
    # a libSQL server is read through studio.store.backends.libsql_server; only a file copy or write asks for a
    # file (a write opens its own stream: studio.store.write.backends.libsql_remote); the token never shows
    with pytest.raises(StoreError, match=r"remote libSQL store \(libsql://example.turso.io\?authToken=\*\*\*\) "
                                         r"is never opened read-write.*Nothing was written"):
        file_target("libsql://example.turso.io?authToken=secret")


def test_om_record_whose_thread_no_longer_exists(fixture_db):
    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("DELETE FROM mastra_threads WHERE id = 'support-2'")
    conn.commit()
    conn.close()
    with open_store(path) as store:
        assert store.get_thread("support-2") is None
        assert store.om_current("thread:support-2") is not None


def test_store_is_used_from_one_thread_at_a_time(fixture_db):
    """The connection is usable from a worker thread that opened it (as the studio's TaskRunner does)."""
    path = fixture_db("support")
    result = {}

    def work():
        with open_store(path) as store:
            result["n"] = len(store.list_threads())

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert result["n"] == 6


def test_quiescent_wal_file_sees_a_later_writer(fixture_db, tmp_path):
    """A WAL database with no -wal (no process has it open) is read without creating files, and
    the store still sees rows another process writes later (it reopens on the next check)."""
    import subprocess
    import sys

    src = fixture_db("resource")  # WAL mode; as shipped, no -wal file beside it
    for ext in ("-wal", "-shm"):  # an empty leftover -wal means the same: nobody has it open
        Path(str(src) + ext).unlink(missing_ok=True)
    with open_store(src) as store:
        assert store.backend.immutable
        assert not Path(str(src) + "-wal").exists()
        version = store.fingerprint()
        before = store.message_count("res-a")
        script = (
            "import libsql, sys; c = libsql.connect(sys.argv[1]); "
            "c.execute(\"INSERT INTO mastra_messages (id, thread_id, content, role, type, \\\"createdAt\\\", "
            "\\\"resourceId\\\") VALUES ('late-1', 'res-a', '{\\\"format\\\":2,\\\"parts\\\":[]}', 'user', 'v2', "
            "'2030-01-01T00:00:00.000Z', 'user-erin')\"); c.commit(); c.close()")
        subprocess.run([sys.executable, "-c", script, str(src)], check=True)
        assert store.fingerprint() != version
        assert store.message_count("res-a") == before + 1
        assert [t.id for t in store.list_threads("user-erin")]  # still readable after the reopen


def _insert_late_message(path: Path) -> None:
    """Commit, as another process's writer would, one user message 'late' (createdAt 2030) into support-2 at PATH."""
    writer = libsql.connect(str(path))
    writer.execute("""INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId")
                      VALUES ('late', 'support-2', '{"format":2,"parts":[]}', 'user', 'v2',
                              '2030-01-01T00:00:00.000Z', 'user-alice')""")
    writer.commit()
    writer.close()


def test_reads_after_a_writer_appears_need_no_explicit_check(fixture_db):
    """Any read (not only data_version/list_threads) of an immutable store sees a later writer's rows:
    the studio's helper process only ever calls detail/page reads."""
    path = fixture_db("support")
    for ext in ("-wal", "-shm"):
        Path(str(path) + ext).unlink(missing_ok=True)
    with open_store(path) as store:
        assert store.backend.immutable
        before = len(store.list_messages("support-2"))
        _insert_late_message(path)
        assert len(store.list_messages("support-2")) == before + 1


def test_a_count_and_its_page_follow_a_writer_and_a_replaced_file_without_a_check_first(fixture_db, tmp_path):
    """An immutable connection is verified after its reads, not checked before them: a page and its count read
    together (history.list_messages, recall) after a writer committed, or after the path was replaced by another
    database, are those of the file as it is then, never the stale connection's (which still reads the old one)."""
    import os

    from studio.store.history import list_messages, list_threads, recall
    from tests.conftest import copy_fixture

    path = fixture_db("support")
    for ext in ("-wal", "-shm"):
        Path(str(path) + ext).unlink(missing_ok=True)
    with open_store(path) as store:
        assert store.backend.immutable
        first = list_messages(store, "support-2", per_page=2)
        _insert_late_message(path)
        newest = recall(store, "support-2", per_page=2)
        assert newest.total == first.total + 1 and newest.message_ids[-1] == "late"
        assert list_messages(store, "support-2", per_page=False).total == first.total + 1
        other = copy_fixture("collab", tmp_path / "other")
        for ext in ("-wal", "-shm"):
            Path(str(path) + ext).unlink(missing_ok=True)
        os.replace(other, path)
        assert {t.id for t in list_threads(store, per_page=False).threads} == {"doc_42", "room_7"}
        assert list_messages(store, "support-2").total == 0


def test_a_replaced_file_is_reopened(fixture_db, tmp_path):
    """When the path is replaced by another database (a copy over it), reads follow the new file."""
    import os

    path = fixture_db("support")
    from tests.conftest import copy_fixture

    copy_other = copy_fixture("collab", tmp_path / "other")
    with open_store(path) as store:
        version = store.fingerprint()
        assert {t.id for t in store.list_threads()} >= {"support-1"}
        for ext in ("-wal", "-shm"):
            Path(str(path) + ext).unlink(missing_ok=True)
        os.replace(copy_other, path)
        assert store.fingerprint() != version
        assert {t.id for t in store.list_threads()} == {"doc_42", "room_7"}
