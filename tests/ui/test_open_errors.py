"""Opening something that is not a Mastra memory.db shows the error and keeps the current database."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from studio.ui.message_dialog import MessageDialog
from tests.conftest import make_plain_sqlite


def drop_file(window, path) -> bool:
    """Drag PATH onto WINDOW and drop it; return whether the drag was accepted."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    drop = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, drop)
    return enter.isAccepted()


def assert_still_open(window, path, threads: int) -> None:
    assert window.database_path == str(path)
    assert window.windowTitle() == f"Memory Studio — {path.name}"
    assert window.thread_model.rowCount() == threads
    assert window.current_thread_id is not None


def test_dropping_a_non_sqlite_file_shows_error_and_keeps_database(studio, studio_ctx, fixture_db, tmp_path, qtbot):
    path = fixture_db("support")
    window = studio(path)
    selected = window.current_thread_id
    bad = tmp_path / "notes.db"
    bad.write_text("this is not a database\n" * 20)
    with qtbot.waitSignal(window.database_failed, timeout=30_000) as blocker:
        assert drop_file(window, bad)
    studio_ctx.runner.wait_idle()
    assert "not a SQLite database" in blocker.args[0]
    box = window.error_box
    assert isinstance(box, MessageDialog) and box.isVisible()
    assert "not a SQLite database" in box.text()
    assert box.textFormat() == Qt.TextFormat.PlainText
    assert_still_open(window, path, 6)
    assert window.current_thread_id == selected
    assert not window.progress.isVisible()
    box.close()

    # The studio still works on the database it kept.
    assert window.select_thread("support-2")
    studio_ctx.runner.wait_idle()
    assert window.thread_view.om_tab.messages_bar.value() is not None


def test_opening_sqlite_without_mastra_tables_or_missing_file(studio, studio_ctx, fixture_db, tmp_path):
    path = fixture_db("collab")
    window = studio(path)
    other = make_plain_sqlite(tmp_path / "other.db")
    window.open_database(other)
    studio_ctx.runner.wait_idle()
    assert window.last_error and "Mastra" in window.last_error
    assert_still_open(window, path, 2)
    window.error_box.close()

    window.open_database(tmp_path / "missing.db")
    studio_ctx.runner.wait_idle()
    assert window.last_error.startswith("No such file")
    assert_still_open(window, path, 2)


def test_dropping_text_without_a_file_is_refused(studio, fixture_db):
    window = studio(fixture_db("tools"))
    mime = QMimeData()
    mime.setText("hello")
    enter = QDragEnterEvent(QPoint(5, 5), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert not enter.isAccepted()


@pytest.mark.filterwarnings("ignore::studio.errors.StoreNotice")   # the token-in-URL warning: wanted here
def test_a_server_url_that_fails_shows_no_secret(studio, studio_ctx, fixture_db, qtbot):
    """A server URL's token or password never reaches the status bar or the error box (port 1: refused at once)."""
    window = studio(fixture_db("collab"))
    for url, shown in (("http://127.0.0.1:1?authToken=s3cret", "http://127.0.0.1:1?authToken=***"),
                       ("postgresql://ann:s3cret@127.0.0.1:1/db", "postgresql://ann:***@127.0.0.1:1/db")):
        with qtbot.waitSignal(window.database_failed, timeout=30_000) as blocker:
            window.open_database(url)
            assert window.statusBar().currentMessage() == f"Opening {shown}…"
        studio_ctx.runner.wait_idle()
        assert shown in blocker.args[0] and "s3cret" not in blocker.args[0]
        assert "s3cret" not in window.error_box.text() and "s3cret" not in window.windowTitle()
        window.error_box.close()
