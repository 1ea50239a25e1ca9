"""Clone / delete / clear in the studio: nothing without confirmation, a backup first, the view refreshed after."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import Qt

from studio.store import open_store
from studio.store.history import recall
from studio.ui.models.roles import ID_ROLE


def digest(path: Path) -> tuple:
    return tuple(hashlib.sha256(Path(str(path) + ext).read_bytes()).hexdigest() if Path(str(path) + ext).exists()
                 else None for ext in ("", "-wal"))


def backups(path: Path) -> list[Path]:
    return sorted(p for p in path.parent.iterdir() if "backup" in p.name)


def test_cancelled_dialogs_write_nothing(studio, studio_ctx, fixture_db):
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1", tab="messages")
    actions = window.history_actions
    before = digest(path)
    window.thread_view.messages_tab.select_row(0)
    actions.update_actions()
    assert actions.clone_action.isEnabled() and actions.delete_action.isEnabled() and actions.clear_action.isEnabled()
    for open_dialog in (actions.clone_thread, actions.delete_message, actions.clear_thread):
        dialog = open_dialog()
        assert dialog is not None and dialog.isVisible() and dialog.cancel_button.isDefault()
        dialog.reject()
        studio_ctx.runner.wait_idle()
    assert digest(path) == before and backups(path) == []
    assert actions.session.backups == {}


def test_clone_from_the_studio(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    actions = window.history_actions
    dialog = actions.clone_thread()
    assert "hist-1" in dialog.text.text() and "backed up" in dialog.backup_note.text()
    dialog.new_id.setText("hist-1-studio")
    dialog.title_edit.setText("Studio branch")
    dialog.limit.setValue(4)
    with (qtbot.waitSignal(window.database_refreshed, timeout=15000),
          qtbot.waitSignal(actions.written, timeout=15000) as written):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert "hist-1-studio" in written.args[0]
    [backup] = backups(path)
    assert actions.session.backup_for(path) == backup
    with open_store(path) as store:
        source = recall(store, "hist-1", per_page=False).messages
        clone = recall(store, "hist-1-studio", per_page=False).messages
        thread = store.get_thread("hist-1-studio")
    assert thread.title == "Studio branch" and thread.metadata["clone"]["sourceThreadId"] == "hist-1"
    assert [m.created_at for m in clone] == [m.created_at for m in source[-4:]]
    with open_store(backup) as store:
        assert store.get_thread("hist-1-studio") is None
    # The view was refreshed and shows the clone.
    assert window.thread_model.has_thread("hist-1-studio")
    assert window.current_thread_id == "hist-1-studio"
    assert str(backup) in window.statusBar().currentMessage()


def test_delete_then_clear_with_one_backup(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("history")
    window = studio(path, thread_id="hist-2", tab="messages")
    tab = window.thread_view.messages_tab
    actions = window.history_actions
    assert tab.model.rowCount() == 5
    tab.select_row(1)
    doomed = tab.view.currentIndex().data(ID_ROLE)
    dialog = actions.delete_message()
    assert doomed in dialog.text.text()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 4 and studio_ctx.runner.pending == 0, timeout=15000)
    assert doomed not in [tab.model.index(r, 0).data(ID_ROLE) for r in range(4)]
    [backup] = backups(path)

    dialog = actions.clear_thread()
    assert "4 messages" in dialog.text.text() and str(backup) in dialog.backup_note.text()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 0 and studio_ctx.runner.pending == 0, timeout=15000)
    assert backups(path) == [backup]                      # one backup per session
    with open_store(path) as store:
        assert store.get_thread("hist-2") is not None and store.message_count("hist-2") == 0
    with open_store(backup) as store:
        assert store.message_count("hist-2") == 5


def test_a_refused_write_leaves_the_file_unchanged(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    actions = window.history_actions
    dialog = actions.clone_thread()
    dialog.new_id.setText("hist-2")                       # taken: Mastra's clone would fail too
    before_main = digest(path)
    with qtbot.waitSignal(actions.failed, timeout=15000) as failed:
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert "already exists" in failed.args[0] and "Nothing was written" in window.statusBar().currentMessage()
    assert digest(path) == before_main
    assert not actions.busy and actions.clone_action.isEnabled()
    # The dialog stays open with what the user typed and says why (plain text), so the id can be corrected.
    assert dialog.isVisible() and dialog.new_id.text() == "hist-2" and dialog.ok_button.isEnabled()
    assert dialog.refusal.isVisible() and "already exists" in dialog.refusal.text()
    assert dialog.refusal.textFormat() == Qt.TextFormat.PlainText
    dialog.new_id.setText("hist-1-retry")
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert not dialog.isVisible()
    with open_store(path) as store:
        assert store.get_thread("hist-1-retry") is not None


def test_clone_dialog_fits_a_uuid_and_a_title(studio, fixture_db):
    """A UUID-length id (36 characters) and a title that long show whole, beside their labels."""
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    window.resize(1024, 700)
    dialog = window.history_actions.clone_thread()
    uuid = "3f2b8c1e-9a4d-4e7f-b6c2-1d0e5a7f9b3c"
    for edit in (dialog.new_id, dialog.title_edit):
        edit.setText(uuid)
        margins = edit.textMargins()
        room = edit.contentsRect().width() - margins.left() - margins.right()
        assert edit.fontMetrics().horizontalAdvance(uuid) < room
    dialog.reject()


def test_undo_on_a_local_file_says_why_it_is_greyed_out(studio, studio_ctx, fixture_db, qtbot):
    """On a file the backup file is the undo: the disabled action says so and names where backups go."""
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    actions = window.history_actions
    actions.update_actions()
    assert not actions.undo_action.isEnabled()
    tip = actions.undo_action.toolTip()
    assert "local file" in tip and "beside the file" in tip and "Server stores" in tip
    assert actions.undo_action.statusTip() == tip
    dialog = actions.clone_thread()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    backup = actions.session.backup_for(path)
    assert backup is not None and str(backup) in actions.undo_action.toolTip()
    assert not actions.undo_action.isEnabled()


def test_delete_message_targets_only_a_message_the_user_selected(studio, studio_ctx, fixture_db):
    """From the Timeline (or with no row selected) there is no message to delete: message #1 is not assumed."""
    window = studio(fixture_db("history"), thread_id="hist-2", tab="messages")
    tab = window.thread_view.messages_tab
    actions = window.history_actions
    assert tab.model.rowCount() == 5
    tab.view.selectionModel().clearSelection()            # a current index nobody selected
    actions.update_actions()
    assert not actions.delete_action.isEnabled() and actions.delete_message() is None
    tab.select_row(1)
    window.thread_view.set_tab("timeline")
    studio_ctx.runner.wait_idle()
    actions.update_actions()
    assert not actions.delete_action.isEnabled() and actions.delete_message() is None
    window.thread_view.set_tab("messages")
    actions.update_actions()
    assert actions.delete_action.isEnabled()
    dialog = actions.delete_message()
    assert dialog is not None and tab.view.currentIndex().data(ID_ROLE) in dialog.text.text()
    dialog.reject()
