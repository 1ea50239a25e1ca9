"""Issue 21: the GUI thread never waits on a store. A database locked by another writer (an agent in the
middle of a write) is waited for on the database worker, sleeping in Python, so the window keeps
processing events, says what it waits for, and Cancel stops the wait with a sentence — a read's, and
a write's (refused, nothing written).

Before, SQLite's busy handler slept inside the libSQL driver holding Python's interpreter lock: the
GUI thread processed nothing for the whole wait (up to the 5 s busy timeout of a read, 3 s per
attempt of a write) and the window went black.

Sequenced with events, never timing: the holder process (tests/lock_holder.py) keeps its lock until
`release`, and the waits' bounds are made longer than any test run, so a wait ends only when the
test stops it or releases the lock.
"""

from __future__ import annotations

import threading

from PySide6.QtCore import QTimer

from studio.store.lock_wait import is_busy, patiently
from studio.store.write.backends import sqlite as sqlite_writes
from studio.store.write.row_backup import backup_root
from tests.lock_holder import copy_for, hold_lock, release

#: Longer than any test run: a wait ends when the test stops it or releases the lock, never by the clock.
NO_BOUND_S = 10**6


def no_bounds(monkeypatch) -> None:
    monkeypatch.setattr("studio.store.lock_wait.LOCK_WAIT_S", float(NO_BOUND_S))
    monkeypatch.setattr(sqlite_writes, "LOCK_WAIT_MS", NO_BOUND_S * 1000)


def gui_thread_runs(qtbot) -> None:
    """Return once the GUI thread has run a posted callback (it is processing events)."""
    ran = []
    QTimer.singleShot(0, lambda: ran.append(1))
    qtbot.waitUntil(lambda: ran == [1], timeout=30000)


def test_the_window_keeps_processing_events_while_a_writer_holds_the_lock(studio, studio_ctx, fixture_db, qtbot,
                                                                          monkeypatch):
    no_bounds(monkeypatch)
    path = copy_for(fixture_db, "rollback-journal")
    window = studio(path)
    window.watcher.stop()   # only F5 reads here
    holder = hold_lock(path, "rollback-journal")
    try:
        window.refresh_action.trigger()   # the listing's read now waits for the writer's lock, on the worker
        # the GUI thread hears about the wait while it goes on (it runs: it shows the notice)
        qtbot.waitUntil(window.lock_notice.isVisible, timeout=30_000)
        assert window.lock_notice.label.text().startswith("Waiting for the database: another process is writing")
        gui_thread_runs(qtbot)                       # the GUI thread runs its posted events …
        assert window.lock_notice.isVisible() and studio_ctx.runner.pending   # … while the read still waits
        window.lock_notice.cancel_button.click()     # Cancel: the read stops waiting and fails with a sentence
        assert studio_ctx.runner.wait_idle()
        assert not window.lock_notice.isVisible()
        assert "Stopped waiting for" in window.statusBar().currentMessage()
        assert window.thread_model.total_rows > 0    # what was shown stays
    finally:
        release(holder)
    window.refresh_action.trigger()                  # the writer is done: F5 reads again
    assert studio_ctx.runner.wait_idle()
    assert not window.lock_notice.isVisible()
    assert window.thread_model.total_rows > 0


def test_a_task_started_during_a_lock_wait_does_not_take_cancel_over(studio, studio_ctx, fixture_db, qtbot,
                                                                     monkeypatch):
    """A pooled task (a model call, a backup) that starts while a read waits has its own stop: Cancel still
    stops the read. (Before, each task that started replaced the one stop event, and Cancel stopped nothing.)"""
    no_bounds(monkeypatch)
    path = copy_for(fixture_db, "rollback-journal")
    window = studio(path)
    window.watcher.stop()
    started, gate = threading.Event(), threading.Event()

    def pooled(_progress, _cancel):
        started.set()
        assert gate.wait(120)   # a safety net only: the test opens the gate
        return "pooled done"

    results = []
    holder = hold_lock(path, "rollback-journal")
    try:
        window.refresh_action.trigger()
        qtbot.waitUntil(window.lock_notice.isVisible, timeout=30000)
        studio_ctx.runner.submit_pooled(pooled, on_done=results.append)
        assert started.wait(120)
        window.lock_notice.cancel_button.click()
        qtbot.waitUntil(lambda: not window.lock_notice.isVisible(), timeout=30000)
        qtbot.waitUntil(lambda: "Stopped waiting for" in window.statusBar().currentMessage(), timeout=30000)
    finally:
        gate.set()
        release(holder)
    assert studio_ctx.runner.wait_idle()
    assert results == ["pooled done"]


def test_a_write_waits_for_the_lock_on_the_worker_and_cancel_refuses_it(studio, studio_ctx, fixture_db, qtbot,
                                                                        monkeypatch):
    """Thread ▸ Edit Thread… while an agent holds a WAL file's write lock: the notice says so, the window runs,
    Cancel refuses the write (the dialog says why) and nothing is written, no row backup left."""
    no_bounds(monkeypatch)
    path = copy_for(fixture_db, "wal")
    window = studio(path, thread_id="support-1")
    window.watcher.stop()
    actions = window.history_actions
    before = window.thread_view.detail.thread.title
    holder = hold_lock(path, "wal")
    try:
        dialog = actions.edit_thread()
        dialog.title_edit.setText("Renamed while an agent wrote")
        dialog.accept()
        qtbot.waitUntil(window.lock_notice.isVisible, timeout=30000)   # BEGIN IMMEDIATE waits, on the worker
        gui_thread_runs(qtbot)
        assert window.lock_notice.isVisible() and actions.busy
        window.lock_notice.cancel_button.click()
        qtbot.waitUntil(lambda: not actions.busy, timeout=30000)
        said = window.statusBar().currentMessage()   # read at once: it is shown for 15 s
    finally:
        release(holder)
    assert studio_ctx.runner.wait_idle()
    assert not window.lock_notice.isVisible()
    assert actions.last_error.startswith("Stopped waiting for") and "Try again when" in actions.last_error
    assert said.startswith("Nothing was written: Stopped waiting for"), said
    from studio.store import open_store

    with open_store(str(path)) as store:
        assert store.get_thread("support-1").title == before
    assert not backup_root().exists() or not any(backup_root().rglob("*.json"))
    dialog.reject()


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
