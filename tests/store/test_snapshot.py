"""A load on a local file (`MemoryStore.snapshot`) reads one state, ends at once and never makes the agent wait;
`fingerprint()` changes when another process commits (what the studio's live refresh polls)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import libsql

from studio.store import open_store


def writer(path):
    """A read-write connection of 'the agent' (kept open: the file's -wal exists, as beside a running agent)."""
    conn = libsql.connect(str(path))
    conn.execute("PRAGMA busy_timeout = 0")   # a writer that waits for nobody: any lock of ours would fail it
    return conn


def rename(conn, thread_id: str, title: str) -> None:
    conn.execute("UPDATE mastra_threads SET title = ? WHERE id = ?", (title, thread_id))
    conn.commit()


def titles(store) -> dict:
    return {t.id: t.title for t in store.list_threads()}


def test_a_load_on_a_wal_file_reads_one_state_and_the_agent_commits_meanwhile(fixture_db):
    path = fixture_db("support")
    agent = writer(path)
    rename(agent, "support-2", "Before the load")       # the -wal now exists: a normal (not immutable) connection
    with open_store(path) as store:
        assert not store.backend.immutable
        with store.snapshot():
            first = titles(store)
            count = store.message_count("support-1")
            rename(agent, "support-1", "Renamed during the load")   # busy_timeout 0: it did not wait for us
            agent.execute("DELETE FROM mastra_messages WHERE thread_id = 'support-1'")
            agent.commit()
            assert titles(store) == first
            assert store.message_count("support-1") == count > 0
            assert store.backend.conn.in_transaction
        assert not store.backend.conn.in_transaction                  # ended with the load
        assert titles(store)["support-1"] == "Renamed during the load"
        assert store.message_count("support-1") == 0
    agent.close()


def test_without_a_load_each_read_sees_the_latest_commit(fixture_db):
    """The control for the test above: the same sequence outside `snapshot()` sees the commit."""
    path = fixture_db("support")
    agent = writer(path)
    rename(agent, "support-2", "Before")
    with open_store(path) as store:
        titles(store)
        rename(agent, "support-1", "Seen at once")
        assert titles(store)["support-1"] == "Seen at once"
    agent.close()


def test_nested_loads_join_the_outer_one(fixture_db):
    path = fixture_db("support")
    agent = writer(path)
    rename(agent, "support-2", "Before")
    with open_store(path) as store:
        with store.snapshot():
            first = titles(store)
            with store.snapshot():
                rename(agent, "support-1", "Renamed inside the inner load")
                assert titles(store) == first
            assert store.backend.conn.in_transaction and titles(store) == first   # the inner end did not end it
        assert titles(store)["support-1"] == "Renamed inside the inner load"
    agent.close()


def test_a_rollback_journal_file_is_not_locked_for_a_whole_load(fixture_db):
    """In rollback-journal mode a read transaction would hold a SHARED lock the agent's commit must wait
    for; a load there reads statement by statement, and the agent commits in the middle of it."""
    path = fixture_db("support")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    conn.close()
    with open_store(path) as store, store.snapshot():
        titles(store)
        agent = writer(path)
        rename(agent, "support-1", "Committed during a load")   # busy_timeout 0: fails if we held a lock
        agent.close()
        assert not store.backend.conn.in_transaction


def test_the_fingerprint_changes_when_another_process_commits(fixture_db):
    path = fixture_db("support")
    with open_store(path) as store:
        first = store.fingerprint()
        assert store.fingerprint() == first
        code = ("import libsql, sys\nc = libsql.connect(sys.argv[1])\n"
                "c.execute(\"UPDATE mastra_threads SET title = 'From another process' WHERE id = 'support-1'\")\n"
                "c.commit()\nc.close()\n")
        subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
        second = store.fingerprint()
        assert second != first
        assert titles(store)["support-1"] == "From another process"
        assert store.fingerprint() == second


def test_the_content_fingerprint_any_backend_can_use(fixture_db):
    """The backend-neutral default (counts and newest updatedAt in one SELECT) also sees a commit."""
    path = fixture_db("support")
    with open_store(path) as store:
        first = store.content_fingerprint()
        assert store.content_fingerprint() == first
        agent = writer(path)
        agent.execute("UPDATE mastra_threads SET \"updatedAt\" = '2031-01-01T00:00:00.000Z' WHERE id = 'support-1'")
        agent.commit()
        agent.close()
        assert store.content_fingerprint() != first
