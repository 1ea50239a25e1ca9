"""Clone / delete / clear in the studio: nothing without confirmation, a backup first, the view refreshed after."""

from __future__ import annotations

import hashlib
from pathlib import Path

from PySide6.QtCore import Qt

from studio.store import open_store
from studio.store.history import recall
from studio.store.write.row_backup import load_row_backup
from studio.ui.models.roles import ID_ROLE


def digest(path: Path) -> tuple:
    return tuple(hashlib.sha256(Path(str(path) + ext).read_bytes()).hexdigest() if Path(str(path) + ext).exists()
                 else None for ext in ("", "-wal"))


def digest_rows(path: Path) -> dict:
    """Every row of every Mastra table of PATH (rowid first), as SQLite stores it."""
    from tests.store.test_file_undo import all_rows

    return all_rows(path)


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
    assert "hist-1" in dialog.text.text() and "row backup" in dialog.backup_note.text()
    dialog.new_id.setText("hist-1-studio")
    dialog.title_edit.setText("Studio branch")
    dialog.limit.setValue(4)
    with (qtbot.waitSignal(window.database_refreshed, timeout=15000),
          qtbot.waitSignal(actions.written, timeout=15000) as written):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert "hist-1-studio" in written.args[0]
    assert backups(path) == []                              # no copy of the file: the rows are saved
    backup = actions.session.backup_for(path)
    assert load_row_backup(backup)["operation"] == "clone"
    with open_store(path) as store:
        source = recall(store, "hist-1", per_page=False).messages
        clone = recall(store, "hist-1-studio", per_page=False).messages
        thread = store.get_thread("hist-1-studio")
    assert thread.title == "Studio branch" and thread.metadata["clone"]["sourceThreadId"] == "hist-1"
    assert [m.created_at for m in clone] == [m.created_at for m in source[-4:]]
    # The view was refreshed and shows the clone.
    assert window.thread_model.has_thread("hist-1-studio")
    assert window.current_thread_id == "hist-1-studio"
    assert str(backup) in window.statusBar().currentMessage()


def test_delete_then_clear_then_undo_each(studio, studio_ctx, fixture_db, qtbot):
    """Issue 21.5: each write saves its rows; Thread ▸ Undo Last Write on a file puts them back, newest first."""
    path = fixture_db("history")
    window = studio(path, thread_id="hist-2", tab="messages")
    tab = window.thread_view.messages_tab
    actions = window.history_actions
    original = digest_rows(path)
    assert tab.model.rowCount() == 5
    tab.select_row(1)
    doomed = tab.view.currentIndex().data(ID_ROLE)
    dialog = actions.delete_message()
    assert doomed in dialog.text.text()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 4 and studio_ctx.runner.pending == 0, timeout=15000)
    assert doomed not in [tab.model.index(r, 0).data(ID_ROLE) for r in range(4)]
    after_delete = digest_rows(path)
    first = actions.session.backup_for(path)

    dialog = actions.clear_thread()
    assert "4 messages" in dialog.text.text() and "row backup" in dialog.backup_note.text()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    qtbot.waitUntil(lambda: tab.model.rowCount() == 0 and studio_ctx.runner.pending == 0, timeout=15000)
    assert backups(path) == [] and actions.session.backup_for(path) != first
    with open_store(path) as store:
        assert store.get_thread("hist-2") is not None and store.message_count("hist-2") == 0

    for expected in (after_delete, original):
        actions.update_actions()
        assert actions.undo_action.isEnabled()
        dialog = actions.undo_last_write()
        assert dialog is not None
        with qtbot.waitSignal(actions.written, timeout=15000):
            dialog.accept()
        studio_ctx.runner.wait_idle()
        assert digest_rows(path) == expected
    qtbot.waitUntil(lambda: tab.model.rowCount() == 5 and studio_ctx.runner.pending == 0, timeout=15000)


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


def test_undo_on_a_local_file_names_its_row_backup(studio, studio_ctx, fixture_db, qtbot):
    """On a file too, Undo Last Write restores the rows of the last write: its tip names the backup."""
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    actions = window.history_actions
    actions.update_actions()
    tip = actions.undo_action.toolTip()
    assert "row backup" in tip and actions.undo_action.statusTip() == tip
    dialog = actions.clone_thread()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    backup = actions.session.backup_for(path)
    assert backup is not None and str(backup) in actions.undo_action.toolTip()
    assert actions.undo_action.isEnabled()


def test_file_back_up_copies_the_whole_file_on_request(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("history")
    window = studio(path, thread_id="hist-1")
    actions = window.history_actions
    assert actions.full_backup_action in window.file_menu.actions()
    actions.full_backup_action.trigger()
    qtbot.waitUntil(lambda: actions.last_full_backup is not None, timeout=15000)
    assert backups(path) == [actions.last_full_backup] and str(actions.last_full_backup) in \
        window.statusBar().currentMessage()
    with open_store(actions.last_full_backup) as store:
        assert store.get_thread("hist-1") is not None


def test_delete_thread_from_the_studio(studio, studio_ctx, fixture_db, qtbot):
    """Thread ▸ Delete Thread… on support-1 (thread-scope OM): the thread, its messages and OM generations go
    (counts from the raw rows before the write), the list no longer shows the thread, Undo brings them all back."""
    import sqlite3

    path = fixture_db("support")
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n_messages = conn.execute("SELECT count(*) FROM mastra_messages WHERE thread_id = 'support-1'").fetchone()[0]
    n_om = conn.execute("SELECT count(*) FROM mastra_observational_memory "
                        "WHERE lookupKey = 'thread:support-1'").fetchone()[0]
    conn.close()
    window = studio(path, thread_id="support-1")
    actions = window.history_actions
    actions.update_actions()
    assert actions.delete_thread_action.isEnabled()
    dialog = actions.delete_thread()
    assert f"{n_messages:,} messages" in dialog.text.text() and "every generation" in dialog.text.text()
    with (qtbot.waitSignal(window.database_refreshed, timeout=15000),
          qtbot.waitSignal(actions.written, timeout=15000) as written):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    assert written.args[0] == f"Deleted thread support-1 ({n_messages:,} messages, {n_om:,} OM records)."
    assert not window.thread_model.has_thread("support-1")
    with open_store(path) as store:
        assert store.get_thread("support-1") is None and store.om_history("thread:support-1") == []
    # Thread ▸ Undo Last Write puts every row back from the write's row backup
    actions.update_actions()
    dialog = actions.undo_last_write()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    with open_store(path) as store:
        assert store.message_count("support-1") == n_messages and len(store.om_history("thread:support-1")) == n_om


def test_edit_thread_from_the_studio(studio, studio_ctx, fixture_db, qtbot):
    """Thread ▸ Edit Thread… (F2): invalid JSON cannot be saved; a removed key is said to stay (Mastra merges);
    Save writes the new title and the changed keys merged into the stored metadata (the oracle's)."""
    import json

    from tests.oracle_facts import threads

    stored = threads("support")["support-meta"]["metadata"]
    assert isinstance(stored, dict) and stored   # the fixture's thread has metadata to edit
    path = fixture_db("support")
    window = studio(path, thread_id="support-meta")
    actions = window.history_actions
    actions.update_actions()
    assert actions.edit_thread_action.isEnabled() and actions.edit_thread_action.shortcut().toString() == "F2"
    dialog = actions.edit_thread()
    assert json.loads(dialog.metadata_edit.toPlainText()) == stored and not dialog.ok_button.isEnabled()
    dialog.metadata_edit.setPlainText("{not json")
    assert not dialog.ok_button.isEnabled() and "not valid JSON" in dialog.check.text()
    first = next(iter(stored))
    edited = {k: v for k, v in stored.items() if k != first}
    edited["added"] = {"nested": [1, "two"]}
    dialog.metadata_edit.setPlainText(json.dumps(edited))
    dialog.title_edit.setText("Renamed <b>here</b>")
    assert dialog.ok_button.isEnabled() and f"kept by Mastra's update (it merges keys): {first}" in dialog.check.text()
    assert dialog.values() == {"title": "Renamed <b>here</b>", "metadata": {"added": {"nested": [1, "two"]}}}
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    with open_store(path) as store:
        thread = store.get_thread("support-meta")
    assert thread.title == "Renamed <b>here</b>" and thread.metadata == {**stored, "added": {"nested": [1, "two"]}}


def test_edit_working_memory_from_the_studio(studio, studio_ctx, fixture_db, qtbot):
    """Working memory tab ▸ Edit… : the scope starts at the one the tab says applies (resource: Mastra's default,
    nothing stored here), the diff shows the change, Save writes the resource row; a JSON (schema mode) text must
    stay JSON."""
    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="working-memory")
    tab = window.thread_view.working_memory_tab
    qtbot.waitUntil(lambda: tab.info is not None and tab.edit_button.isEnabled(), timeout=10000)
    actions = window.history_actions
    with qtbot.waitSignal(tab.edit_requested, timeout=30_000):
        tab.edit_button.click()
    dialog = actions.dialog
    assert dialog.scope == "resource" and dialog.editor.toPlainText() == "" and not dialog.ok_button.isEnabled()
    dialog.editor.setPlainText("# Notes\n- likes teal")
    assert "+# Notes" in dialog.diff_view.toPlainText() and dialog.ok_button.isEnabled()
    with qtbot.waitSignal(actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    with open_store(path) as store:
        assert store.get_resource("user-alice").working_memory == "# Notes\n- likes teal"
    qtbot.waitUntil(lambda: tab.info is not None and tab.info.resource_text == "# Notes\n- likes teal", timeout=10000)

    dialog = actions.edit_working_memory()
    dialog.scope_combo.setCurrentIndex(1)   # thread scope: nothing stored
    dialog.editor.setPlainText('{"name": "Ann"}')
    assert dialog.ok_button.isEnabled()
    dialog.reject()


def test_working_memory_dialog_keeps_schema_mode_json(qtbot):
    from studio.app.thread_detail import WorkingMemoryInfo
    from studio.ui.widgets.working_memory_dialog import WorkingMemoryDialog

    info = WorkingMemoryInfo("t", "r", None, '{"name": "Ann", "tags": []}', True, "resource", "")
    dialog = WorkingMemoryDialog(info, "edit", "backup")
    qtbot.addWidget(dialog)
    dialog.editor.setPlainText('{"name": "Ann", "tags": [}')
    assert not dialog.ok_button.isEnabled() and "valid JSON" in dialog.check.text()
    dialog.editor.setPlainText('{"name": "Bo", "tags": []}')
    assert dialog.ok_button.isEnabled() and dialog.values() == {"scope": "resource",
                                                                 "text": '{"name": "Bo", "tags": []}'}


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


def test_edit_thread_pins_the_title(studio, studio_ctx, fixture_db, qtbot):
    """Pin this title writes metadata.titlePinned = true (Mastra's rename flag, which OM's title extraction
    respects: studio.store.write.om_messages.new_thread_title) with the title."""
    path = fixture_db("history")
    window = studio(path, thread_id="hist-2")
    dialog = window.history_actions.edit_thread()
    assert not dialog.pin_box.isChecked()
    dialog.title_edit.setText("My own title")
    dialog.pin_box.setChecked(True)
    assert dialog.values()["metadata"] == {"titlePinned": True} and "titlePinned" in dialog.check.text()
    with qtbot.waitSignal(window.history_actions.written, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    with open_store(path) as store:
        thread = store.get_thread("hist-2")
    assert thread.title == "My own title" and thread.metadata["titlePinned"] is True
    from studio.store.write.om_messages import new_thread_title

    assert new_thread_title({"title": thread.title}, thread.metadata, "An extracted title") is None
