"""Thread ▸ Clone Thread…, Delete Message…, Clear Thread's Messages…: writes, only after the user confirms.

Each action opens a dialog that says what will be written and where the backup goes; nothing is
written unless the user accepts it. The write runs on the TaskRunner's database worker (so no read
of ours overlaps it) through the window's `WriteSession` (`studio.store.writes`, the session of its
`WindowContext`): the rows each write changes saved before its COMMIT (a row backup, which Undo
Last Write restores), then
ONE transaction that is checked against concurrent writers and leaves the file unchanged when it
fails. The view is refreshed afterwards (a clone is selected once the thread list has it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QMessageBox,
)

from studio.app import text as fmt
from studio.app import thread_writes
from studio.app.failures import outcome_heading
from studio.ui.context import WindowContext
from studio.ui.message_dialog import MessageDialog
from studio.ui.widgets.confirm_write_dialog import ConfirmWriteDialog


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
        self.edit_thread_action = QAction("&Edit Thread…", window, shortcut=QKeySequence("F2"),
                                          triggered=self._on_edit_thread_action_triggered)
        self.working_memory_action = QAction("Edit &Working Memory…", window,
                                             triggered=self._on_working_memory_action_triggered)
        window.thread_view.working_memory_tab.edit_requested.connect(self._on_working_memory_action_triggered)
        self.delete_thread_action = QAction("Delete &Thread…", window,
                                            triggered=self._on_delete_thread_action_triggered)
        self.undo_action = QAction("&Undo Last Write…", window, triggered=self._on_undo_action_triggered)
        self.full_backup_action = QAction("&Back Up…", window, triggered=self._on_full_backup_action_triggered)
        self.full_backup_action.setStatusTip("Copy the whole file now (SQLite online backup, verified), beside it or "
                                             "in the session's backup folder; writes need none: each saves its rows")
        self.last_full_backup: Path | None = None
        self.update_actions()

    def write_actions(self) -> tuple[QAction, ...]:
        """Return the actions that write a thread's rows: Edit Thread…, Edit Working Memory…, Clone Thread…, Delete
        Message…, Clear Thread's Messages…, Delete Thread…."""
        return self.edit_thread_action, self.working_memory_action, self.clone_action, self.delete_action, \
            self.clear_action, self.delete_thread_action

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
        self.delete_thread_action.setEnabled(ready and not self._window.thread_view.detail.orphan)
        self.edit_thread_action.setEnabled(ready and not self._window.thread_view.detail.orphan)
        self.working_memory_action.setEnabled(ready and not self._window.thread_view.detail.orphan)
        self.delete_action.setEnabled(ready and self._selected_message() is not None)
        path = self._window.database_path
        self.undo_action.setEnabled(path is not None and not self.busy)
        tip = self.undo_hint(path)
        self.undo_action.setToolTip(tip)
        self.undo_action.setStatusTip(tip)

    def _backup_folder(self) -> str:
        from studio.store.write.row_backup import backup_root

        return str(self.session.backup_dir or backup_root())

    def undo_hint(self, path: str | None) -> str:
        """Return what Undo Last Write does for PATH (a sentence, plain text)."""
        done = self.session.backup_for(path) if path is not None else None
        where = f"this session's last one is {done}" if done is not None else f"they are in {self._backup_folder()}"
        return ("Restore the rows the last studio write changed, from its row backup (every write saves one before "
                f"its commit; {where}). Nothing is written if any of those rows changed since.")

    def _backup_note(self, path: str) -> str:
        not_atomic = self._window.write_note
        note = (f"Before its commit, the write saves every row it changes to a JSON row backup in "
                f"{self._backup_folder()} (Thread ▸ Undo Last Write restores it). "
                + (not_atomic if not_atomic else "The write is one transaction; if anything fails, nothing is "
                                                  "written."))
        if self.session.full_backup:
            note += " The whole file is copied (verified) beside it before the session's first write, as asked."
        return note

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

    def edit_thread(self) -> ConfirmWriteDialog | None:
        """Open Edit Thread (title, metadata) on the thread shown; write as Memory.updateThread only when saved."""
        from studio.ui.widgets.edit_thread_dialog import EditThreadDialog

        thread, path = self._thread(), self._window.database_path
        if thread is None or path is None:
            return None
        text = (f"Edit the thread “{thread.title or thread.id}” ({thread.id}) in {path} as Mastra's "
                "Memory.updateThread does: a new title, metadata keys set or added (never removed), updatedAt now.")
        dialog = EditThreadDialog(thread, text, self._backup_note(path), parent=self._window)
        return self._ask(dialog, lambda: self._run_update_thread(path, thread.id, dialog.values()))

    def edit_working_memory(self) -> ConfirmWriteDialog | None:
        """Open Edit Working Memory on the thread shown; write as Memory.updateWorkingMemory only when saved."""
        from studio.ui.widgets.working_memory_dialog import WorkingMemoryDialog

        thread, path = self._thread(), self._window.database_path
        info = self._window.thread_view.working_memory_tab.info
        if thread is None or path is None:
            return None
        if info is None or info.thread_id != thread.id:
            self._window.statusBar().showMessage("The working memory is still being read; try again in a moment.",
                                                 5000)
            return None
        text = (f"Edit the working memory of “{thread.title or thread.id}” ({thread.id}) in {path} as Mastra's "
                "Memory.updateWorkingMemory does. Which one the agent reads is its workingMemory.scope (code, not "
                "data): choose it below.")
        dialog = WorkingMemoryDialog(info, text, self._backup_note(path), parent=self._window)
        return self._ask(dialog, lambda: self._run_working_memory(path, thread.id, dialog.values()))

    def delete_thread(self) -> ConfirmWriteDialog | None:
        """Ask to delete the thread shown as Mastra's Memory.deleteThread does; write only when accepted."""
        thread, path = self._thread(), self._window.database_path
        if thread is None or path is None:
            return None
        detail = self._window.thread_view.detail
        n = detail.message_count if detail is not None else 0
        record = detail.record if detail is not None else None
        om = ("its Observational Memory record (every generation)" if record is not None and record.scope == "thread"
              else "no OM record (a resource's shared record stays)" if record is not None else "no OM record")
        text = (f"Delete the thread “{thread.title or thread.id}” ({thread.id}) from {path}: the thread, its "
                f"{n:,} message{'s' if n != 1 else ''}, {om}, its vectors in this store's vector indexes and its "
                "reminder thread if it owns one — as Mastra's Memory.deleteThread does. "
                "This cannot be undone except from the backup.")
        dialog = ConfirmWriteDialog("Delete Thread", text, self._backup_note(path), action="Delete Thread",
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_delete_thread(path, thread.id))

    def undo_last_write(self) -> ConfirmWriteDialog | None:
        """Ask to restore the rows of the last studio write to the open store; undo only when accepted."""
        from studio.errors import StudioError
        from studio.store.write.undo import describe_backup, pick_backup

        path = self._window.database_path
        if path is None:
            return None
        try:
            backup, document = pick_backup(path, None, self.session.backup_dir)
        except StudioError as exc:
            self._on_write_failed(exc)
            return None
        text = (f"{describe_backup(document)} Nothing is written if any of these rows changed since the write "
                f"(on {document.get('target')}).")
        if self._window.write_note:
            text += f"\n\n{self._window.write_note}"
        dialog = ConfirmWriteDialog("Undo Last Write", text, f"Row backup: {backup}", action="Undo",
                                    parent=self._window)
        return self._ask(dialog, lambda: self._run_undo(path, backup))

    # -- writes (on the database worker) ---------------------------------------------------

    def _submit(self, fn, done: Callable[[object], None]) -> None:
        self.busy = True
        self.update_actions()
        self._window.statusBar().showMessage("Writing…")
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

    def _run_delete_thread(self, path: str, thread_id: str) -> None:
        session = self.session

        def said(w) -> str:
            r = w.result
            extra = [f"{r['om_records']:,} OM record{'s' if r['om_records'] != 1 else ''}"] if r["om_records"] else []
            extra += [f"{r['vectors']:,} vector{'s' if r['vectors'] != 1 else ''}"] if r["vectors"] else []
            extra += ["its reminder thread"] if len(r["thread_ids"]) > 1 else []
            return (f"Deleted thread {thread_id} ({r['messages']:,} message{'s' if r['messages'] != 1 else ''}"
                    + "".join(f", {e}" for e in extra) + ").")

        self._submit(lambda: thread_writes.delete_thread(path, thread_id, session=session),
                     lambda w: self._on_written(path, said(w)))

    def _run_update_thread(self, path: str, thread_id: str, values: dict) -> None:
        session = self.session
        self._submit(lambda: thread_writes.update_thread(path, thread_id, session=session, **values),
                     lambda w: self._on_written(path, f"Updated thread {thread_id}."))

    def _run_working_memory(self, path: str, thread_id: str, values: dict) -> None:
        session = self.session
        self._submit(lambda: thread_writes.update_working_memory(path, thread_id, session=session, **values),
                     lambda w: self._on_written(path, f"Wrote the {values['scope']}-scope working memory of "
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

    def back_up_file(self) -> None:
        """File ▸ Back Up…: copy the open file whole (verified), on the pool; say where in the status bar."""
        from studio.store.target import is_server_target
        from studio.store.write.file_backup import backup_database

        path = self._window.database_path
        if path is None or self.busy:
            return
        if is_server_target(path):
            self._window.statusBar().showMessage("A server store is not a file to copy: every write saves the rows "
                                                 "it changes (Thread ▸ Undo Last Write).", 10000)
            return
        folder = self.session.backup_dir
        self._window.statusBar().showMessage(f"Backing up {path}…")
        self._ctx.runner.submit_pooled(
            lambda _p, _c: backup_database(path, folder=folder) if folder is not None else backup_database(path),
            on_done=self._on_backed_up, on_error=self._on_write_failed)

    def _on_backed_up(self, made) -> None:
        self.last_full_backup = Path(made)
        self._window.statusBar().showMessage(f"Backed up the whole file to {made} (verified).", 10000)

    def _on_full_backup_action_triggered(self) -> None:
        self.back_up_file()

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
        heading = outcome_heading(exc)
        self._window.statusBar().showMessage(f"{heading}: {message}", 15000)
        self.failed.emit(message)
        if self.dialog is not None and self.dialog.isVisible():
            self.dialog.refuse(message)   # the dialog says why, and keeps what the user typed
            return
        box = self._ctx.interaction.report(heading, message, icon=QMessageBox.Icon.Warning)
        if box is not None:   # screenshots never pop up boxes
            self.error_box = box

    # -- slots -----------------------------------------------------------------------------

    def _on_clone_action_triggered(self, _checked: bool = False) -> None:
        self.clone_thread()

    def _on_delete_action_triggered(self, _checked: bool = False) -> None:
        self.delete_message()

    def _on_clear_action_triggered(self, _checked: bool = False) -> None:
        self.clear_thread()

    def _on_edit_thread_action_triggered(self, _checked: bool = False) -> None:
        self.edit_thread()

    def _on_working_memory_action_triggered(self, _checked: bool = False) -> None:
        self.edit_working_memory()

    def _on_delete_thread_action_triggered(self, _checked: bool = False) -> None:
        self.delete_thread()

    def _on_undo_action_triggered(self, _checked: bool = False) -> None:
        self.undo_last_write()
