"""Reads on PostgreSQL never get in the agent's way: one snapshot per load, ended at once, no lock beyond a
plain read, a read-only session; and a commit by another process is noticed by the fingerprint the
studio polls (live refresh), in the store and in the window.

The tests write only into their own schema, a copy of the `support` scenario that real Mastra wrote
(`pg_corpus`), so the corpus the parity tests compare with stays as Mastra left it.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import psycopg
import pytest

from studio.errors import StoreError
from studio.store import open_store
from studio.store.backends.pg import PgBackend
from studio.ui.models.roles import ID_ROLE
from studio.ui.models.threads import ThreadColumn

SCHEMA = "snapshot_copy"
TABLES = ("mastra_threads", "mastra_messages", "mastra_resources", "mastra_observational_memory")


@pytest.fixture
def copy_target(pg_corpus):
    """A schema holding a copy of Mastra's `support` rows; its studio URL. Dropped afterwards."""
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        for table in TABLES:
            conn.execute(f"CREATE TABLE {SCHEMA}.{table} (LIKE support.{table} INCLUDING ALL)")
            conn.execute(f"INSERT INTO {SCHEMA}.{table} SELECT * FROM support.{table}")
    yield f"{pg_corpus.url}?schema={SCHEMA}"
    with psycopg.connect(pg_corpus.url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def other_session(pg_corpus):
    """A read-write session of 'another process' (the agent), autocommit."""
    return psycopg.connect(pg_corpus.url, autocommit=True)


def rename(conn, thread_id: str, title: str) -> None:
    conn.execute(f'UPDATE {SCHEMA}.mastra_threads SET title = %s, "updatedAt" = now(), "updatedAtZ" = now() '
                 "WHERE id = %s", (title, thread_id))


def add_thread(conn, thread_id: str) -> None:
    conn.execute(f'INSERT INTO {SCHEMA}.mastra_threads (id, "resourceId", title, metadata, "createdAt", "updatedAt") '
                 "SELECT %s, \"resourceId\", 'Added by the agent', metadata, now(), now() "
                 f"FROM {SCHEMA}.mastra_threads WHERE id = 'support-1'", (thread_id,))


def state_of(conn, pid: int) -> str:
    return conn.execute("SELECT state FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()[0]


def test_a_load_sees_one_snapshot_while_another_session_commits(pg_corpus, copy_target):
    with open_store(copy_target) as store, other_session(pg_corpus) as agent:
        assert isinstance(store.backend, PgBackend)
        titles = {t.id: t.title for t in store.list_threads()}
        with store.snapshot():
            first = {t.id: t.title for t in store.list_threads()}
            messages = store.message_count("support-1")
            rename(agent, "support-1", "Renamed between two queries")
            add_thread(agent, "added-mid-load")
            agent.execute(f"DELETE FROM {SCHEMA}.mastra_messages WHERE thread_id = 'support-1'")
            # every later query of the load still reads the state of its first one
            assert {t.id: t.title for t in store.list_threads()} == first == titles
            assert store.message_count("support-1") == messages > 0
            assert store.get_thread("added-mid-load") is None
        # the load is over: the next one sees the commits
        after = {t.id: t.title for t in store.list_threads()}
        assert after["support-1"] == "Renamed between two queries" and "added-mid-load" in after
        assert store.message_count("support-1") == 0


def test_without_a_load_each_statement_sees_the_latest_commit(pg_corpus, copy_target):
    """The control: outside `snapshot()` the same sequence sees the commit (so the test above can fail)."""
    with open_store(copy_target) as store, other_session(pg_corpus) as agent:
        store.list_threads()
        rename(agent, "support-1", "Renamed, seen at once")
        assert store.get_thread("support-1").title == "Renamed, seen at once"


def test_a_load_is_one_read_only_repeatable_read_transaction_ended_at_once(pg_corpus, copy_target):
    with open_store(copy_target) as store, other_session(pg_corpus) as watcher:
        pid = store.backend.conn.info.backend_pid
        assert state_of(watcher, pid) == "idle"
        with store.snapshot():
            store.list_threads()
            level, read_only = store.rows("SELECT current_setting('transaction_isolation'), "
                                           "current_setting('transaction_read_only')")[0]
            assert (level, read_only) == ("repeatable read", "on")
            assert state_of(watcher, pid) == "idle in transaction"   # the load's transaction is open…
            locks = watcher.execute("SELECT DISTINCT mode FROM pg_locks WHERE pid = %s AND locktype = 'relation'",
                                    (pid,)).fetchall()
            assert {m for (m,) in locks} == {"AccessShareLock"}      # …and holds plain read locks only
        assert state_of(watcher, pid) == "idle"                      # …and ends with the load
        ours = watcher.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'memory-studio' "
                               "AND state LIKE 'idle in transaction%%'").fetchone()[0]
        assert ours == 0
        # a failure inside a load ends its transaction too
        with pytest.raises(StoreError), store.snapshot():
            store.rows("SELECT * FROM no_such_table")
        assert state_of(watcher, pid) == "idle"
        assert store.get_thread("support-1") is not None             # the session is still usable


def test_the_session_cannot_write_even_by_mistake(copy_target):
    with open_store(copy_target) as store:
        with pytest.raises(StoreError, match="read-only"):
            store.rows(f"UPDATE {SCHEMA}.mastra_threads SET title = 'x'")
        with pytest.raises(StoreError, match="read-only"), store.snapshot():
            store.rows(f"DELETE FROM {SCHEMA}.mastra_messages")


def test_the_cli_reads_leave_no_transaction_open(pg_corpus, copy_target):
    """Every CLI command is one load; afterwards no session of ours is idle in a transaction."""
    for args in (["inspect", copy_target, "--json"], ["threads", copy_target, "--json"],
                 ["recall", copy_target, "--thread", "support-1", "--json"]):
        done = subprocess.run([sys.executable, "-m", "studio", *args], capture_output=True, text=True, timeout=180)
        assert done.returncode == 0, done.stderr[-2000:]
    with other_session(pg_corpus) as watcher:
        rows = watcher.execute("SELECT state FROM pg_stat_activity WHERE application_name = 'memory-studio'").fetchall()
    assert all(not state.startswith("idle in transaction") for (state,) in rows)


def test_the_fingerprint_changes_with_a_commit_to_this_store_only(pg_corpus, copy_target):
    with open_store(copy_target) as store, other_session(pg_corpus) as agent:
        first = store.fingerprint()
        assert store.fingerprint() == first                           # nothing written: the same value
        agent.execute("CREATE TEMP TABLE unrelated (x int)")          # a commit elsewhere on the server
        agent.execute("INSERT INTO unrelated VALUES (1)")
        assert store.fingerprint() == first
        rename(agent, "support-2", "Renamed by the agent")
        second = store.fingerprint()
        assert second != first
        add_thread(agent, "added-for-fingerprint")
        third = store.fingerprint()
        assert third not in (first, second)
        agent.execute(f"DELETE FROM {SCHEMA}.mastra_threads WHERE id = 'added-for-fingerprint'")
        fourth = store.fingerprint()
        assert fourth != third
    # an update that changes no count and no updatedAt is seen through the server's write counters,
    # which a session reports at its end (or within ~10 s of a commit, PostgreSQL 15+)
    with open_store(copy_target) as store:
        settled = store.fingerprint()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:   # the sessions above have reported their counters
            time.sleep(1)
            now = store.fingerprint()
            if now == settled:
                break
            settled = now
        with other_session(pg_corpus) as agent:
            agent.execute(f"UPDATE {SCHEMA}.mastra_messages SET content = content WHERE thread_id = 'support-2'")
        assert store.content_fingerprint() == settled.split(":")[0]   # counts and updatedAt did not change…
        fourth = settled
        deadline = time.monotonic() + 30
        while store.fingerprint() == fourth and time.monotonic() < deadline:
            time.sleep(0.5)
        assert store.fingerprint() != fourth                          # …the counters did


def test_the_window_refreshes_when_another_process_writes(pg_corpus, copy_target, studio, studio_ctx, qtbot):
    window = studio(copy_target)
    model = window.thread_model

    def titles() -> dict:
        return {model.index(r, 0).data(ID_ROLE): model.index(r, ThreadColumn.TITLE).data()
                for r in range(model.rowCount())}

    assert "support-1" in titles()
    new_id = f"added-{uuid.uuid4().hex[:8]}"
    code = ("import psycopg, sys\n"
            "with psycopg.connect(sys.argv[1], autocommit=True) as c:\n"
            f"    c.execute('UPDATE {SCHEMA}.mastra_threads SET title = %s WHERE id = %s', "
            "('Renamed by another process', 'support-1'))\n"
            f"    c.execute('INSERT INTO {SCHEMA}.mastra_threads "
            "(id, \"resourceId\", title, metadata, \"createdAt\", \"updatedAt\") "
            f"SELECT %s, \"resourceId\", %s, metadata, now(), now() FROM {SCHEMA}.mastra_threads WHERE id = %s', "
            "(sys.argv[2], 'New thread', 'support-1'))\n")
    subprocess.run([sys.executable, "-c", code, pg_corpus.url, new_id], check=True, timeout=60)
    qtbot.waitUntil(lambda: titles().get("support-1") == "Renamed by another process" and new_id in titles(),
                    timeout=20000)
    assert window.watcher.active and window.watcher.path is None   # polled, no file to watch
    studio_ctx.runner.wait_idle()
    with other_session(pg_corpus) as watcher:   # every load of the window ended its transaction
        states = watcher.execute("SELECT state FROM pg_stat_activity WHERE application_name = 'memory-studio'"
                                 ).fetchall()
    assert states and all(not state.startswith("idle in transaction") for (state,) in states)
