"""Live databases: rows that live only in the -wal are shown, and writes by another process appear by themselves."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import uuid

import libsql

from studio.store.records import iso_to_ms, ms_to_iso
from studio.ui.models.roles import BAR_ROLE, ID_ROLE
from studio.ui.models.threads import ThreadColumn
from tests.conftest import load_oracle
from tests.oracle_facts import status, threads

SUPPORT_1_MESSAGES = len(load_oracle("support")["threads"]["support-1"]["messages"])


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_by_id(window) -> dict:
    model = window.thread_model
    return {model.index(r, 0).data(ID_ROLE): r for r in range(model.rowCount())}


def main_file_counts(path, work) -> dict[str, int]:
    """Return {thread id: message count} of the main database file alone, without its -wal (raw rows of a copy)."""
    work.mkdir()
    alone = work / path.name
    shutil.copyfile(path, alone)
    conn = sqlite3.connect(alone)
    try:
        counts = dict.fromkeys((t for (t,) in conn.execute("SELECT id FROM mastra_threads")), 0)
        counts.update(conn.execute("SELECT thread_id, count(*) FROM mastra_messages GROUP BY thread_id").fetchall())
    finally:
        conn.close()
    return counts


def test_live_wal_fixture_shows_rows_only_in_the_wal(studio, studio_ctx, fixture_db, tmp_path):
    path = fixture_db("live/support")
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size > 0
    before = (digest(path), digest(wal))
    oracle = load_oracle("live/support")
    counts = {tid: len(t["messages"]) for tid, t in oracle["threads"].items()}   # what Mastra reads, -wal included
    in_main = main_file_counts(path, tmp_path / "main-only")
    wal_threads = sorted(set(counts) - set(in_main))
    wal_messages = sorted(t for t in in_main if counts[t] > in_main[t])
    assert wal_threads and wal_messages, \
        "the live fixture has no thread (or no message of an older thread) only in its -wal"
    window = studio(path)
    rows = rows_by_id(window)
    assert set(wal_threads) <= set(rows)                     # threads that exist only in the -wal
    model = window.thread_model
    for tid in wal_messages:                                 # threads with some of their messages only in the -wal
        assert model.index(rows[tid], ThreadColumn.MESSAGES).data() == str(counts[tid])
    [tid, *_] = [t for t in wal_threads if t in {s for om in oracle["om"].values() for s in om["status"]}]
    assert model.index(rows[tid], ThreadColumn.TITLE).data() == threads("live/support")[tid]["title"]
    want = status("live/support", tid)
    bar = model.index(rows[tid], ThreadColumn.OBSERVATION).data(BAR_ROLE)
    assert (bar.value, bar.threshold) == (want["pendingTokens"], want["threshold"])
    assert window.select_thread(tid)
    studio_ctx.runner.wait_idle()
    assert window.thread_view.om_tab.messages_bar.value() == want["pendingTokens"]
    window.close()
    # Read-only: neither the main file nor the -wal were touched.
    assert (digest(path), digest(wal)) == before


def append_message(path, thread_id: str, text: str) -> str:
    """Insert a user message at the end of THREAD_ID through a read-write connection (another 'process')."""
    conn = libsql.connect(str(path))
    row = conn.execute('SELECT content, "resourceId", "createdAt" FROM mastra_messages WHERE thread_id = ? '
                       'ORDER BY "createdAt" DESC LIMIT 1', (thread_id,)).fetchall()[0]
    content = {"format": 2, "parts": [{"type": "text", "text": text}], "content": text}
    msg_id = str(uuid.uuid4())
    created = ms_to_iso(iso_to_ms(row[2]) + 1000)
    conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                 "VALUES (?, ?, ?, 'user', 'v2', ?, ?)", (msg_id, thread_id, json.dumps(content), created, row[1]))
    conn.commit()
    conn.close()
    return msg_id


def test_auto_refresh_when_another_process_writes(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    n = SUPPORT_1_MESSAGES
    assert tab.model.rowCount() == n
    pending_before = window.thread_view.om_tab.messages_bar.value()
    row = rows_by_id(window)["support-1"]
    assert window.thread_model.index(row, ThreadColumn.MESSAGES).data() == str(n)

    msg_id = append_message(path, "support-1", "A new question written while the studio watches. " * 10)

    def refreshed() -> bool:
        r = rows_by_id(window).get("support-1")
        return (r is not None and window.thread_model.index(r, ThreadColumn.MESSAGES).data() == str(n + 1)
                and tab.model.rowCount() == n + 1 and studio_ctx.runner.pending == 0)

    qtbot.waitUntil(refreshed, timeout=15000)
    studio_ctx.runner.wait_idle()
    assert tab.model.index(n, 0).data(ID_ROLE) == msg_id
    assert window.current_thread_id == "support-1"                      # the selection is kept
    assert window.threads_view.currentIndex().data(ID_ROLE) == "support-1"
    assert window.thread_view.current_tab() == "messages"
    assert window.thread_view.om_tab.messages_bar.value() > pending_before  # status re-read too
    bar = window.thread_model.index(rows_by_id(window)["support-1"], ThreadColumn.OBSERVATION).data(BAR_ROLE)
    assert bar.value == window.thread_view.om_tab.messages_bar.value()


def test_refresh_action_rereads(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("tools")
    window = studio(path)
    window.watcher.stop()  # only F5 re-reads here
    conn = libsql.connect(str(path))
    conn.execute("UPDATE mastra_threads SET title = 'Renamed by the agent' WHERE id = 'tools-1'")
    conn.commit()
    conn.close()
    with qtbot.waitSignal(window.database_refreshed, timeout=10000):
        window.refresh_action.trigger()
    studio_ctx.runner.wait_idle()
    assert window.thread_model.index(0, ThreadColumn.TITLE).data() == "Renamed by the agent"
    assert window.thread_view.title.text() == "Renamed by the agent"


def test_auto_refresh_on_a_file_nobody_had_open(studio, studio_ctx, fixture_db, qtbot):
    """A WAL database without a -wal (the agent is not running) is opened immutable; when the agent
    starts and writes, the studio must still notice and show the new message."""
    from pathlib import Path

    path = fixture_db("support")
    for ext in ("-wal", "-shm"):
        Path(str(path) + ext).unlink(missing_ok=True)
    window = studio(path, thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    assert tab.model.rowCount() == SUPPORT_1_MESSAGES
    assert not Path(str(path) + "-wal").exists()  # reading created no files

    append_message(path, "support-1", "Written after the studio opened a quiescent file.")

    qtbot.waitUntil(lambda: tab.model.rowCount() == SUPPORT_1_MESSAGES + 1 and studio_ctx.runner.pending == 0,
                    timeout=15000)
    assert window.current_thread_id == "support-1"


def test_a_commit_by_another_process_is_picked_up_by_polling(studio, studio_ctx, fixture_db, qtbot):
    """Live refresh polls the store's fingerprint (no file-system watch): a title changed by a separate
    process shows up by itself. The process renames the thread as Mastra's updateThread does (title and
    updatedAt): on SQLite the refresh finds the rows written through their stamps (studio.store.live_changes)."""
    import subprocess
    import sys

    path = fixture_db("tools")
    window = studio(path)
    assert window.watcher.active and window.watcher.path == str(path)
    code = ("import libsql, sys\nc = libsql.connect(sys.argv[1])\n"
            "c.execute(\"UPDATE mastra_threads SET title = 'Renamed by another process', "
            "updatedAt = '2027-01-01T00:00:00.000Z' WHERE id = 'tools-1'\")\n"
            "c.commit()\nc.close()\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
    qtbot.waitUntil(lambda: window.thread_model.index(0, ThreadColumn.TITLE).data() == "Renamed by another process",
                    timeout=15000)


def test_a_commit_re_reads_only_the_thread_it_changed(studio, studio_ctx, fixture_db, qtbot):
    """Issue 21: an agent's message to one thread re-reads that thread only (its row, count, bars, health),
    and every other row is kept as it was (the same objects, statuses included); the figures equal a fresh load."""
    from studio.app.live import load_live_listing
    from studio.app.statuses import iter_thread_statuses
    from studio.store import open_store

    path = fixture_db("support")
    window = studio(path)
    studio_ctx.runner.wait_idle()
    before = {r.thread.id: r for r in window.thread_model.all_threads()}
    target = next(t for t, r in before.items() if r.lookup_key == f"thread:{t}")
    n = before[target].thread.message_count
    append_message(path, target, "One more message from the agent. " * 20)
    qtbot.waitUntil(lambda: window.loader.last_refresh is not None and studio_ctx.runner.pending == 0, timeout=15000)
    studio_ctx.runner.wait_idle()
    refresh = window.loader.last_refresh
    # the thread written only (the fixture's newest updatedAt is long past: no second write can share its millisecond)
    expected = {target}
    assert refresh.changes.threads == expected and not refresh.changes.everything
    assert refresh.wider == []                     # the rows written explained every count
    after = {r.thread.id: r for r in window.thread_model.all_threads()}
    assert all(after[t] is before[t] for t in before if t not in expected)
    assert after[target].thread.message_count == n + 1
    with open_store(str(path)) as fresh_store:
        fresh = load_live_listing(fresh_store)
        [want] = list(iter_thread_statuses(fresh_store, [r.thread for r in fresh.listing.rows
                                                                 if r.thread.id == target]))
    assert after[target].status == want
    row = rows_by_id(window)[target]
    assert window.thread_model.index(row, ThreadColumn.OBSERVATION).data(BAR_ROLE).value == want.pending_tokens


def test_every_agent_session_is_seen_on_a_file_nobody_had_open(studio, studio_ctx, fixture_db, qtbot):
    """An agent that starts, writes and stops, three times (each session's last connection checkpoints the WAL and
    removes the -wal as it closes): the studio, opened on the quiescent file, sees every session's message, its
    thread row and its Messages tab equal to the rows on disk after each."""
    from pathlib import Path

    path = fixture_db("support")
    for ext in ("-wal", "-shm"):
        Path(str(path) + ext).unlink(missing_ok=True)
    window = studio(path, thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    for session in range(1, 4):
        msg_id = append_message(path, "support-1", f"Agent session {session} wrote this.")
        assert not Path(str(path) + "-wal").exists()   # the session's close checkpointed and removed it
        expected = SUPPORT_1_MESSAGES + session

        def seen(expected=expected) -> bool:
            r = rows_by_id(window).get("support-1")
            return (r is not None and window.thread_model.index(r, ThreadColumn.MESSAGES).data() == str(expected)
                    and tab.model.rowCount() == expected and studio_ctx.runner.pending == 0)

        qtbot.waitUntil(seen, timeout=30000)
        assert tab.model.index(expected - 1, 0).data(ID_ROLE) == msg_id
