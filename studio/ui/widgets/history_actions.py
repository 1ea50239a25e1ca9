"""Thread ▸ Clone Thread…, Delete Message…, Clear Thread's Messages…: writes, only after the user confirms.

Each action opens a dialog that says what will be written and where the backup goes; nothing is
written unless the user accepts it. The write runs on the TaskRunner's database worker (so no read
of ours overlaps it) through the window's `WriteSession` (`studio.store.writes`, the session of its
`WindowContext`): a verified SQLite online backup of the file before the session's first write, then
ONE transaction that is checked against concurrent writers and leaves the file unchanged when it
fails. The view is refreshed afterwards (a clone is selected once the thread list has it).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLineEdit,
    QMessageBox,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
)

from studio.app import text as fmt
from studio.app import thread_writes
from studio.ui.context import WindowContext
from studio.ui.message_dialog import MessageDialog
from studio.ui.screen import DIALOG_SHARE, available_area
from studio.ui.widgets.common import plain_label

MAX_MESSAGE_LIMIT = 10_000_000


def _is_server(path) -> bool:
    """True for a server URL, PostgreSQL or libSQL (writes back up rows, not the file; Undo Last Write applies)."""
    from studio.store.write.row_backup import is_row_backup_target

    return is_row_backup_target(path)


# What the clone fields must show whole: a UUID-length thread id (36 characters) and a title of that length.
_UUID_SAMPLE = "00000000-0000-0000-0000-000000000000"


class ConfirmWriteDialog(QDialog):
    """Ask before a write: what it does (plain text), where the backup goes; optional clone fields.

    Accepting it (`accept()`, the action button) is the user's confirmation: it emits `confirmed`
    and the dialog stays open, its button disabled, while the write runs. `finish()` closes it after
    a successful write; `refuse(sentence)` shows why the write was refused (plain text) and keeps the
    dialog open with what the user typed, so a taken clone id can be corrected and retried.
    `values()` returns the fields as typed.
    """

    confirmed = Signal()

    def __init__(self, title: str, text: str, backup_note: str, *, action: str, clone_of=None, parent=None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        layout = QVBoxLayout(self)
        self.text = plain_label(text, wrap=True)
        layout.addWidget(self.text)
        self.new_id = self.title_edit = self.limit = None
        if clone_of is not None:
            form = QFormLayout()
            self.new_id = QLineEdit()
            room = self.new_id.fontMetrics().horizontalAdvance(_UUID_SAMPLE + "00")   # + the frame's padding
            self.new_id.setMinimumWidth(room)
            self.new_id.setPlaceholderText("a new UUID")
            self.title_edit = QLineEdit()
            self.title_edit.setMinimumWidth(room)
            self.title_edit.setPlaceholderText(f"Clone of {clone_of.title}" if clone_of.title else "(no title)")
            self.limit = QSpinBox()
            self.limit.setRange(0, MAX_MESSAGE_LIMIT)
            self.limit.setSpecialValueText("all messages")
            self.limit.setToolTip("Clone only the newest N messages (Mastra's messageLimit); 0 clones them all")
            form.addRow("New thread id", self.new_id)
            form.addRow("Title", self.title_edit)
            form.addRow("Messages", self.limit)
            for field in (self.new_id, self.title_edit, self.limit):   # a refusal's lines never squash them
                field.setSizePolicy(field.sizePolicy().horizontalPolicy(), QSizePolicy.Policy.Fixed)
            layout.addLayout(form)
        self.backup_note = plain_label(backup_note, "muted", wrap=True)
        layout.addWidget(self.backup_note)
        self.refusal = plain_label("", "loss", wrap=True)   # why the last try was refused (nothing was written)
        self.refusal.hide()
        layout.addWidget(self.refusal)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = buttons.addButton(action, QDialogButtonBox.ButtonRole.AcceptRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.cancel_button = buttons.button(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setDefault(True)   # Enter does not write
        # Wide enough for the sentences and (in a clone) a UUID-length id beside its label; 72 average
        # characters wrap the sentences into a few readable lines.
        self.setMinimumWidth(min(self.fontMetrics().averageCharWidth() * 72, 760))

    def accept(self) -> None:
        """The user confirmed: emit `confirmed`, keep the dialog open (button disabled) while the write runs."""
        self.refusal.hide()
        self.ok_button.setEnabled(False)
        self.confirmed.emit()

    def finish(self) -> None:
        """The write succeeded: close the dialog as accepted."""
        super().accept()

    def refuse(self, sentence: str) -> None:
        """The write was refused (nothing written): show SENTENCE as plain text, keep the fields, allow a retry."""
        self.refusal.setText(f"Nothing was written: {sentence}")
        self.refusal.show()
        self._grow_to_fit()
        self.ok_button.setEnabled(True)
        if self.new_id is not None:
            self.new_id.setFocus()
            self.new_id.selectAll()

    def _grow_to_fit(self) -> None:
        """Grow the dialog (within the screen) to the height its wrapped sentences and fields now need."""
        layout = self.layout()
        layout.activate()
        wanted = layout.totalHeightForWidth(self.width()) if layout.hasHeightForWidth() else self.sizeHint().height()
        limit = int(available_area(self).height() * DIALOG_SHARE)
        if wanted > self.height():
            self.resize(self.width(), min(wanted, limit))

    def values(self) -> dict:
        """Return the clone options typed: {new_thread_id, title, message_limit} (None when left empty)."""
        if self.new_id is None:
            return {}
        return {"new_thread_id": self.new_id.text().strip() or None, "title": self.title_edit.text() or None,
                "message_limit": self.limit.value() or None}


class HistoryActions(QObject):
    """A main window's history writes: clone a thread, delete the selected message, clear a thread's messages, undo.

    WINDOW is the MainWindow this is a part of: the actions apply to its thread view's thread and
    selected message in its open database; the window puts the actions in its Thread menu and calls
    `update_actions` when that menu opens.
    """

    written = Signal(str)   # what was written (a sentence), after the write succeeded
    failed = Signal(str)    # why a write did not happen (nothing was written)

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._ctx = ctx
        self._window = window
        self.session = ctx.session
        self.dialog: ConfirmWriteDialog | None = None
        self.error_box: MessageDialog | None = None
        self.last_error: str | None = None
        self.busy = False
        self.clone_action = QAction("&Clone Thread…", window, triggered=self._on_clone_action_triggered)
        self.delete_action = QAction("&Delete Message…", window, triggered=self._on_delete_action_triggered)
        self.clear_action = QAction("Clear Thread's &Messages…", window, triggered=self._on_clear_action_triggered)
        self.undo_action = QAction("&Undo Last Write…", window, triggered=self._on_undo_action_triggered)
        self.update_actions()

    def write_actions(self) -> tuple[QAction, QAction, QAction]:
        """Return the actions that write a thread's rows: Clone Thread…, Delete Message…, Clear Thread's Messages…."""
        return self.clone_action, self.delete_action, self.clear_action

    # -- state -----------------------------------------------------------------------------

    def _thread(self):
        detail = self._window.thread_view.detail
        return detail.thread if detail is not None else None

    def _selected_message(self):
        """The message the user selected on the Messages tab, shown now; None from any other tab.

        Qt keeps a current index in a list nobody clicked (its first row), and the Messages tab keeps
        its selection while another tab (the Timeline) is shown: neither is a message the user chose.
        """
        view = self._window.thread_view
        tab = view.messages_tab
        if view.current_tab() != "messages":
            return None
        index = tab.view.currentIndex()
        selection = tab.view.selectionModel()
        if not index.isValid() or selection is None or not selection.isRowSelected(index.row(), index.parent()):
            return None
        row = tab.model.message_row(index.row())
        return row.message if row is not None else None

    def update_actions(self) -> None:
        """Enable the actions that apply: a thread shown, a message selected, no write running."""
        thread = self._thread()
        ready = thread is not None and self._window.database_path is not None and not self.busy
        self.clone_action.setEnabled(ready)
        self.clear_action.setEnabled(ready)
        self.delete_action.setEnabled(ready and self._selected_message() is not None)
        path = self._window.database_path
        self.undo_action.setEnabled(path is not None and _is_server(path) and not self.busy)
        tip = self.undo_hint(path)
        self.undo_action.setToolTip(tip)
        self.undo_action.setStatusTip(tip)

    def _backup_folder(self) -> str:
        return str(self.session.backup_dir) if self.session.backup_dir is not None else "beside the file"

    def undo_hint(self, path: str | None) -> str:
        """Return what Undo Last Write does for PATH, or why it does not apply (a sentence, plain text)."""
        server = ("Server stores (PostgreSQL, libSQL server): restore the rows the last studio write changed, "
                  "from its row backup.")
        if path is None or _is_server(path):
            return server
        done = self.session.backup_for(path)
        where = f"this session's backup is {done}" if done is not None else f"backups go {self._backup_folder()}"
        return (f"Not for a local file: there the backup file is the undo (the studio backs the whole file up "
                f"before its first write of a session; {where}); close the studio and copy it back. {server}")

    def _backup_note(self, path: str) -> str:
        if _is_server(path):
            return ("Before its commit, the write saves every row it changes to a JSON row backup in "
                    "~/.local/share/memory-studio/backups (Thread ▸ Undo Last Write restores it). The write is one "
                    "transaction; if anything fails, nothing is written.")
        done = self.session.backup_for(path)
        if done is not None:
            return f"This session already backed the file up to {done}."
        return ("Before this first write of the session, the whole file is backed up (SQLite online backup, "
                "verified) beside it. The write is one transaction; if anything fails, the file is left unchanged.")

    # -- dialogs ---------------------------------------------------------------------------

    def _ask(self, dialog: ConfirmWriteDialog, on_accepted: Callable[[], None]) -> ConfirmWriteDialog:
        self.dialog = dialog
        dialog.confirmed.connect(on_accepted)
        dialog.open()
        return dialog

    def clone_thread(self) -> ConfirmWriteDialog | None:
        """Ask to clone the thread shown (Memory.cloneThread); write only when the user accepts."""
        thread, path = self._thread(), self._window.database_path
        if thread is None or path is None:
            return None
        text = (f"Clone the thread “{thread.title or thread.id}” ({thread.id}) as Mastra's cloneThread does: a new "
                f"thread of resource {thread.resource_id} with copies of its messages and a metadata.clone "
                f"record, written into {path}.")
        dialog = ConfirmWriteDialog("Clone Thread", text, self._backup_note(path), action="Clone", clone_of=thread,
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_clone(path, thread.id, dialog.values()))

    def delete_message(self) -> ConfirmWriteDialog | None:
        """Ask to delete the selected message (Memory.deleteMessages); write only when the user accepts."""
        message, path = self._selected_message(), self._window.database_path
        if message is None or path is None:
            return None
        preview = fmt.preview(message.text, 200) or "(no text)"
        text = (f"Delete this {message.role} message from {path}? This cannot be undone except from the backup.\n\n"
                f"{message.id}\n{preview}")
        dialog = ConfirmWriteDialog("Delete Message", text, self._backup_note(path), action="Delete",
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_delete(path, [message.id]))

    def clear_thread(self) -> ConfirmWriteDialog | None:
        """Ask to delete every message of the thread shown (the thread stays); write only when accepted."""
        thread, path = self._thread(), self._window.database_path
        if thread is None or path is None:
            return None
        detail = self._window.thread_view.detail
        n = detail.message_count if detail is not None else 0
        text = (f"Delete all {n:,} message{'s' if n != 1 else ''} of the thread “{thread.title or thread.id}” "
                f"({thread.id}) from {path}? The thread itself stays. This cannot be undone except from the backup.")
        dialog = ConfirmWriteDialog("Clear Thread's Messages", text, self._backup_note(path), action="Delete All",
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_clear(path, thread.id))

    def undo_last_write(self) -> ConfirmWriteDialog | None:
        """Ask to restore the rows of the last studio write to the open server store; undo only when accepted."""
        from studio.errors import StudioError
        from studio.store.write.undo import describe_backup, pick_backup

        path = self._window.database_path
        if path is None or not _is_server(path):
            return None
        try:
            backup, document = pick_backup(path, None, self.session.backup_dir)
        except StudioError as exc:
            self._on_write_failed(exc)
            return None
        text = (f"{describe_backup(document)} Nothing is written if any of these rows changed since the write "
                f"(on {document.get('target')}).")
        dialog = ConfirmWriteDialog("Undo Last Write", text, f"Row backup: {backup}", action="Undo",
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_undo(path, backup))

    # -- writes (on the database worker) ---------------------------------------------------

    def _submit(self, fn, done: Callable[[object], None]) -> None:
        self.busy = True
        self.update_actions()
        self._window.statusBar().showMessage("Writing… (backing the file up first)")
        self._ctx.runner.submit(lambda _store, _p, _c: fn(), on_done=done, on_error=self._on_write_failed,
                                key=None, load=False)   # a write (its own connection), not a load of the store

    def _run_clone(self, path: str, thread_id: str, options: dict) -> None:
        session = self.session
        self._submit(lambda: thread_writes.clone_thread(path, thread_id, session=session, **options),
                     lambda cloned: self._on_cloned(path, cloned))

    def _run_delete(self, path: str, ids: list[str]) -> None:
        session = self.session
        self._submit(lambda: thread_writes.delete_messages(path, ids, session=session),
                     lambda w: self._on_written(path, f"Deleted {w.result} message{'s' if w.result != 1 else ''}."))

    def _run_clear(self, path: str, thread_id: str) -> None:
        session = self.session
        self._submit(lambda: thread_writes.clear_thread(path, thread_id, session=session),
                     lambda w: self._on_written(path, f"Deleted {w.result:,} message{'s' if w.result != 1 else ''} of "
                                                      f"{thread_id}."))

    def _run_undo(self, path: str, backup) -> None:
        session = self.session
        self._submit(lambda: session.undo_write(path, backup),
                     lambda r: self._on_written(path, f"Undid the {r['operation']} of {r['created_at']}."))

    def _on_cloned(self, path: str, cloned: thread_writes.ClonedThread) -> None:
        new_id = cloned.thread["id"]
        n = len(cloned.message_ids)
        window = self._window

        def select_clone() -> None:
            window.database_refreshed.disconnect(select_clone)
            window.select_thread(new_id)

        window.database_refreshed.connect(select_clone)
        self._on_written(path, f"Cloned into thread {new_id} ({n:,} message{'s' if n != 1 else ''}).")

    def _on_written(self, path: str, sentence: str) -> None:
        self.busy = False
        self._window.announce_written(path, sentence)
        self._window.refresh()
        self.update_actions()
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.finish()
        self.written.emit(sentence)

    def _on_write_failed(self, exc: Exception) -> None:
        self.busy = False
        self.update_actions()
        message = str(exc) or exc.__class__.__name__
        self.last_error = message
        self._window.statusBar().showMessage(f"Nothing was written: {message}", 15000)
        self.failed.emit(message)
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.refuse(message)   # the dialog says why, and keeps what the user typed
            return
        box = self._ctx.interaction.report("Nothing was written", message, icon=QMessageBox.Icon.Warning)
        if box is not None:   # screenshots never pop up boxes
            self.error_box = box

    # -- slots -----------------------------------------------------------------------------

    def _on_clone_action_triggered(self, _checked: bool = False) -> None:
        self.clone_thread()

    def _on_delete_action_triggered(self, _checked: bool = False) -> None:
        self.delete_message()

    def _on_clear_action_triggered(self, _checked: bool = False) -> None:
        self.clear_thread()

    def _on_undo_action_triggered(self, _checked: bool = False) -> None:
        self.undo_last_write()
