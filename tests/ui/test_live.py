"""Live databases: rows that live only in the -wal are shown, and writes by another process appear by themselves."""

from __future__ import annotations

import hashlib
import json
import uuid

import libsql

from studio.store.records import iso_to_ms, ms_to_iso
from studio.ui.models.roles import BAR_ROLE, ID_ROLE
from studio.ui.models.threads import ThreadColumn
from tests.conftest import load_oracle


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rows_by_id(window) -> dict:
    model = window.thread_model
    return {model.index(r, 0).data(ID_ROLE): r for r in range(model.rowCount())}


def test_live_wal_fixture_shows_rows_only_in_the_wal(studio, studio_ctx, fixture_db):
    path = fixture_db("live/support")
    wal = path.with_name(path.name + "-wal")
    assert wal.stat().st_size > 0
    before = (digest(path), digest(wal))
    window = studio(path)
    rows = rows_by_id(window)
    # support-4, support-5 and support-meta exist only in the -wal; support-3 has 6 of its 18 messages there.
    assert {"support-4", "support-5", "support-meta"} <= set(rows)
    model = window.thread_model
    assert model.index(rows["support-3"], ThreadColumn.MESSAGES).data() == "18"
    assert model.index(rows["support-5"], ThreadColumn.TITLE).data() == "Rust borrow checker"
    oracle = load_oracle("live/support")["om"]["thread:support-5"]["status"]["support-5"]
    bar = model.index(rows["support-5"], ThreadColumn.OBSERVATION).data(BAR_ROLE)
    assert (bar.value, bar.threshold) == (oracle["pendingTokens"], oracle["threshold"])
    assert window.select_thread("support-5")
    studio_ctx.runner.wait_idle()
    assert window.thread_view.om_tab.messages_bar.value() == oracle["pendingTokens"]
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
    assert tab.model.rowCount() == 57
    pending_before = window.thread_view.om_tab.messages_bar.value()
    row = rows_by_id(window)["support-1"]
    assert window.thread_model.index(row, ThreadColumn.MESSAGES).data() == "57"

    msg_id = append_message(path, "support-1", "A new question written while the studio watches. " * 10)

    def refreshed() -> bool:
        r = rows_by_id(window).get("support-1")
        return (r is not None and window.thread_model.index(r, ThreadColumn.MESSAGES).data() == "58"
                and tab.model.rowCount() == 58 and studio_ctx.runner.pending == 0)

    qtbot.waitUntil(refreshed, timeout=15000)
    studio_ctx.runner.wait_idle()
    assert tab.model.index(57, 0).data(ID_ROLE) == msg_id
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
    assert tab.model.rowCount() == 57
    assert not Path(str(path) + "-wal").exists()  # reading created no files

    append_message(path, "support-1", "Written after the studio opened a quiescent file.")

    qtbot.waitUntil(lambda: tab.model.rowCount() == 58 and studio_ctx.runner.pending == 0, timeout=15000)
    assert window.current_thread_id == "support-1"


def test_a_commit_by_another_process_is_picked_up_by_polling(studio, studio_ctx, fixture_db, qtbot):
    """Live refresh polls the store's fingerprint (no file-system watch): a title changed by a separate
    process shows up by itself."""
    import subprocess
    import sys

    path = fixture_db("tools")
    window = studio(path)
    assert window.watcher.active and window.watcher.path == str(path)
    code = ("import libsql, sys\nc = libsql.connect(sys.argv[1])\n"
            "c.execute(\"UPDATE mastra_threads SET title = 'Renamed by another process' WHERE id = 'tools-1'\")\n"
            "c.commit()\nc.close()\n")
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
    qtbot.waitUntil(lambda: window.thread_model.index(0, ThreadColumn.TITLE).data() == "Renamed by another process",
                    timeout=15000)
