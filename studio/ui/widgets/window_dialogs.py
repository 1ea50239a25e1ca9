"""The main window's dialogs: Thread ▸ Reflect Now…, Observe Now…, Activate Buffered Chunks… and
View ▸ Overview…, and what follows their writes.

`WindowDialogs` is a part of `MainWindow`, made with the window's `WindowContext`: its dialogs write
through the context's write session and remember their choices in its settings. It owns the four
actions (the window puts them in its menus), enables them for the thread shown (`follow_detail`),
and keeps the Overview on the open database (File ▸ Open, every refresh).
"""

from __future__ import annotations

import functools

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence

from studio.app.thread_detail import ThreadDetail
from studio.ui.context import WindowContext
from studio.ui.screen import SCREEN_SHARE, fit_within_screen
from studio.ui.style import STYLE_SHEET


class WindowDialogs(QObject):
    """The Reflect, Observe and Activate dialogs of a main window, its Overview window, and re-reading after a write.

    WINDOW is the MainWindow this is a part of: the dialogs open on its thread view's thread and its
    open database, say what was written in its status bar and re-read it (`refresh`).
    """

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._ctx = ctx
        self._window = window
        self.thread_view = window.thread_view
        self.thread_model = window.thread_model
        self.reflect_action = QAction("&Reflect Now…", window, shortcut=QKeySequence("Ctrl+R"), enabled=False,
                                      triggered=self._on_reflect_action_triggered)
        self.observe_action = QAction("&Observe Now…", window, shortcut=QKeySequence("Ctrl+E"), enabled=False,
                                      triggered=self._on_observe_action_triggered)
        self.activate_action = QAction("&Activate Buffered Chunks…", window, shortcut=QKeySequence("Ctrl+Shift+B"),
                                       enabled=False, triggered=self._on_activate_action_triggered)
        self.overview_action = QAction("&Overview…", window, shortcut=QKeySequence("Ctrl+Shift+O"),
                                       triggered=self.show_overview)
        self.reflect_dialog = None
        self.observe_dialog = None
        self.overview_window = None
        self.thread_view.om_tab.reflect_requested.connect(self._on_reflect_action_triggered)
        self.thread_view.om_tab.observe_requested.connect(self._on_observe_action_triggered)
        self.thread_view.om_tab.activate_requested.connect(self._on_activate_action_triggered)
        self.thread_view.history_tab.generation_written.connect(self._on_generation_written)
        self.thread_view.history_tab.write_failed.connect(self._on_write_failed)

    def follow_detail(self, detail: ThreadDetail | None) -> None:
        """Enable the write actions that apply to DETAIL, the thread now shown (None: it is gone)."""
        record = detail.record if detail is not None else None
        self.reflect_action.setEnabled(record is not None)
        self.observe_action.setEnabled(record is not None)
        self.activate_action.setEnabled(record is not None and bool(record.buffered_chunks))

    def refused_here(self, operation: str) -> bool:
        """True, with the sentence in the status bar, when OPERATION ("reflect", "observe", …) is not built for the
        open store (on MongoDB every OM write is built; a write missing from MONGODB_WRITES would be refused): its
        dialog then does not open (no model is called for a write that cannot be made)."""
        from studio.errors import WriteRefused
        from studio.store.write.transaction import refuse_read_only_store

        path = self._window.database_path
        try:
            if path is not None:
                refuse_read_only_store(path, operation)
        except WriteRefused as exc:
            self._window.statusBar().showMessage(f"Nothing was written: {exc}", 15000)
            return True
        return False

    def _on_reflect_action_triggered(self, _checked: bool = False) -> None:
        """Thread ▸ Reflect Now…: open the dialog on the thread shown (its thread- or resource-scope record)."""
        from studio.ui.widgets.reflect_dialog import ReflectDialog

        if self.refused_here("reflect"):
            return

        detail, path = self.thread_view.detail, self._window.database_path
        if path is None or detail is None or detail.record is None:
            self._window.statusBar().showMessage("Select a thread with observational memory to reflect.", 5000)
            return
        dialog = ReflectDialog(self._ctx.runner, path, detail.thread.id, thread_title=detail.thread.title,
                               write_note=self._window.write_note,
                               settings=self._ctx.settings, write_session=self._ctx.session,
                               interaction=self._ctx.interaction, parent=self._window)
        dialog.setStyleSheet(STYLE_SHEET)
        dialog.committed.connect(self._on_generation_written)
        dialog.commit_failed.connect(self._on_write_failed)
        dialog.finished.connect(functools.partial(self._on_reflect_dialog_finished, dialog))
        self.reflect_dialog = dialog
        dialog.open()

    def _om_dialog(self, cls, what: str):
        """Open the modal OM write dialog CLS on the thread shown, or say why not (WHAT: "observe", …)."""
        detail, path = self.thread_view.detail, self._window.database_path
        if self.refused_here(what):
            return None
        if path is None or detail is None or detail.record is None:
            self._window.statusBar().showMessage(f"Select a thread with observational memory to {what}.", 5000)
            return None
        dialog = cls(self._ctx.runner, path, detail.thread.id, thread_title=detail.thread.title,
                     settings=self._ctx.settings, write_session=self._ctx.session, interaction=self._ctx.interaction,
                     write_note=self._window.write_note, parent=self._window)   # a standalone server: not atomic
        dialog.setStyleSheet(STYLE_SHEET)
        dialog.committed.connect(self._on_observation_written)
        dialog.commit_failed.connect(self._on_write_failed)
        dialog.finished.connect(functools.partial(self._on_observe_dialog_finished, dialog))
        self.observe_dialog = dialog
        dialog.open()
        return dialog

    def _on_observe_action_triggered(self, _checked: bool = False) -> None:
        """Thread ▸ Observe Now…: preview the Observer on the thread's unobserved window, then commit or discard."""
        from studio.ui.widgets.observe_dialog import ObserveDialog

        self._om_dialog(ObserveDialog, "observe")

    def _on_activate_action_triggered(self, _checked: bool = False) -> None:
        """Thread ▸ Activate Buffered Chunks…: activate the record's buffered chunks now, after confirmation."""
        from studio.ui.widgets.activate_dialog import ActivateDialog

        self._om_dialog(ActivateDialog, "activate")

    def _on_observe_dialog_finished(self, dialog, _result: int) -> None:
        if self.observe_dialog is dialog:
            self.observe_dialog = None
        dialog.deleteLater()

    def _on_observation_written(self, result: dict) -> None:
        """An observation or an activation was committed: say so and re-read the database."""
        row = result.get("row", result) if isinstance(result, dict) else {}
        self._window.announce_written(self._window.database_path,
                                      f"Observation log of {row.get('lookupKey', '')} updated "
                                      f"({row.get('observationTokenCount') or 0:,} tokens).")
        self._window.refresh()

    def show_overview(self, _checked: bool = False):
        """View ▸ Overview…: every OM thread of the database by its two ratios (a window; click opens a thread)."""
        import gc

        from studio.ui.widgets.overview import OverviewWindow

        if self._window.uses_helper:
            # Move what is alive now (the listing of a big database: thousands of rows) out of the cyclic
            # collector's reach: its full passes stalled the GUI thread ~60 ms while the Overview loaded
            # (benchmarks/overview_benchmark.py); refcounting still frees these objects.
            gc.freeze()
        if self.overview_window is None:
            self.overview_window = OverviewWindow(self._ctx.runner, self._window)
            self.overview_window.thread_requested.connect(self._on_overview_thread_requested)
        self._load_overview()
        fit_within_screen(self.overview_window, SCREEN_SHARE)
        self.overview_window.show()
        fit_within_screen(self.overview_window, SCREEN_SHARE)
        self.overview_window.raise_()
        return self.overview_window

    def _load_overview(self) -> None:
        """Fill the Overview with the open database's OM threads (it follows File ▸ Open and every refresh)."""
        rows = self.thread_model.all_threads()
        self.overview_window.load([r.thread for r in rows if r.has_om], use_helper=self._window.uses_helper,
                                  without_om=sum(1 for r in rows if not r.has_om),
                                  database=self._window.database_path)

    def overview_follows(self, *, listed: bool) -> None:
        """Keep an open Overview on the open database: emptied when another file opens, refilled once LISTED."""
        overview = self.overview_window
        if overview is None or not overview.isVisible():
            return
        if listed:
            self._load_overview()
        else:
            overview.load([], database=self._window.database_path)

    def _on_overview_thread_requested(self, thread_id: str) -> None:
        if self.overview_window is None or self.overview_window.database != self._window.database_path:
            return   # a point of another file's Overview
        if self._window.select_thread(thread_id):
            self._window.raise_()
            self._window.activateWindow()

    def _on_reflect_dialog_finished(self, dialog, _result: int) -> None:
        if self.reflect_dialog is dialog:
            self.reflect_dialog = None
        dialog.deleteLater()

    def _on_write_failed(self, _message: str) -> None:
        """A write was refused or failed (nothing written): re-read, in case another process changed the file."""
        self._window.refresh()

    def _on_generation_written(self, row: dict) -> None:
        """A reflection or a revert was committed: say so and re-read the database (History shows it)."""
        generation = row.get("generationCount") if isinstance(row, dict) else None
        self._window.announce_written(self._window.database_path,
                                      f"Generation {generation} of {row.get('lookupKey', '')} written.")
        self._window.refresh()
