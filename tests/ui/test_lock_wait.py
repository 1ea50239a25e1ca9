"""Issue 21: the GUI thread never waits on a store. A rollback-journal database locked by another writer
(an agent in the middle of a write) is waited for on the database worker, sleeping in Python, so the
window keeps processing events, says what it waits for, and Cancel stops the wait with a sentence.

Before, SQLite's busy handler slept inside the libSQL driver holding Python's interpreter lock: the
GUI thread processed nothing for the whole wait (up to the 5 s busy timeout) and the window went black.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys

from PySide6.QtCore import QTimer

from studio.store.lock_wait import is_busy, patiently

HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


def rollback_journal_copy(fixture_db):
    path = fixture_db("support")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone()[0] == "delete"
    conn.close()
    return path


def hold_lock(path) -> subprocess.Popen:
    """Another process (another SQLite library: its locks are POSIX locks of its own) holds PATH's EXCLUSIVE lock
    until a line is written to its stdin."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def release(holder: subprocess.Popen) -> None:
    holder.stdin.write("\n")
    holder.stdin.flush()
    holder.wait(timeout=30)


def test_the_window_keeps_processing_events_while_a_writer_holds_the_lock(studio, studio_ctx, fixture_db, qtbot,
                                                                          monkeypatch):
    # the read waits until Cancel, however slow the machine (the wait's own bound is not what is tested here)
    monkeypatch.setattr("studio.store.lock_wait.LOCK_WAIT_S", 120.0)
    path = rollback_journal_copy(fixture_db)
    window = studio(path)
    window.watcher.stop()   # only F5 reads here
    ticks = []
    timer = QTimer(window)
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    holder = hold_lock(path)
    try:
        window.refresh_action.trigger()   # the listing's read now waits for the writer's lock, on the worker
        # the GUI thread hears about the wait while it goes on (it runs: it shows the notice)
        qtbot.waitUntil(window.lock_notice.isVisible, timeout=30_000)
        assert window.lock_notice.label.text().startswith("Waiting for the database: another process is writing")
        seen = len(ticks)
        qtbot.wait(300)
        assert window.lock_notice.isVisible()        # still waiting for the lock …
        assert len(ticks) - seen >= 5                # … and the GUI thread kept running its timers meanwhile
        window.lock_notice.cancel_button.click()     # Cancel: the read stops waiting and fails with a sentence
        assert studio_ctx.runner.wait_idle()
        assert not window.lock_notice.isVisible()
        assert "Stopped waiting for" in window.statusBar().currentMessage()
        assert window.thread_model.total_rows > 0    # what was shown stays
    finally:
        release(holder)
        timer.stop()
    window.refresh_action.trigger()                  # the writer is done: F5 reads again
    assert studio_ctx.runner.wait_idle()
    assert not window.lock_notice.isVisible()
    assert window.thread_model.total_rows > 0


def test_a_locked_read_waits_then_succeeds_once_the_writer_is_done(fixture_db):
    """Without a face: `patiently` tries a locked read again until the lock is gone (here: released after the
    third try), and any other error goes through at once."""
    tries = []

    def locked_twice():
        tries.append(1)
        if len(tries) < 3:
            raise ValueError("database is locked")
        return "rows"

    assert patiently(locked_twice, "memory.db") == "rows" and len(tries) == 3
    assert is_busy(ValueError("database is locked")) and not is_busy(ValueError("no such table: x"))
