"""The main window's dialogs: Thread ▸ Reflect Now…, Observe Now…, Activate Buffered Chunks… and
View ▸ Overview…, and what follows their writes.

`WindowDialogs` is a mixin of `MainWindow` (it uses the window's runner, context, thread view, models and
status bar); the Overview follows the open database (File ▸ Open, every refresh).
"""

from __future__ import annotations

import functools

from studio.ui.style import STYLE_SHEET


class WindowDialogs:
    """Mixin of MainWindow: the Reflect dialog, the Overview window, and re-reading after a write."""

    def _on_reflect_action_triggered(self, _checked: bool = False) -> None:
        """Thread ▸ Reflect Now…: open the dialog on the thread shown (its thread- or resource-scope record)."""
        from studio.ui.widgets.reflect_dialog import ReflectDialog

        detail = self.thread_view.detail
        if self._path is None or detail is None or detail.record is None:
            self.statusBar().showMessage("Select a thread with observational memory to reflect.", 5000)
            return
        dialog = ReflectDialog(self._runner, self._path, detail.thread.id, thread_title=detail.thread.title,
                               settings=self._ctx.settings,
                               write_session=self._write_session(), parent=self)
        dialog.setStyleSheet(STYLE_SHEET)
        dialog.committed.connect(self._on_generation_written)
        dialog.commit_failed.connect(self._on_write_failed)
        dialog.finished.connect(functools.partial(self._on_reflect_dialog_finished, dialog))
        self.reflect_dialog = dialog
        dialog.open()

    def _om_dialog(self, cls, what: str):
        """Open the modal OM write dialog CLS on the thread shown, or say why not (WHAT: "observe", …)."""
        detail = self.thread_view.detail
        if self._path is None or detail is None or detail.record is None:
            self.statusBar().showMessage(f"Select a thread with observational memory to {what}.", 5000)
            return None
        dialog = cls(self._runner, self._path, detail.thread.id, thread_title=detail.thread.title,
                     settings=self._ctx.settings, write_session=self._write_session(), parent=self)
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
        self.history_actions.announce_written(self._path, f"Observation log of {row.get('lookupKey', '')} updated "
                                              f"({row.get('observationTokenCount') or 0:,} tokens).")
        self.refresh()

    def show_overview(self, _checked: bool = False):
        """View ▸ Overview…: every OM thread of the database by its two ratios (a window; click opens a thread)."""
        import gc

        from studio.ui.widgets.overview import OverviewWindow

        if self._use_helper:
            # Move what is alive now (the listing of a big database: thousands of rows) out of the cyclic
            # collector's reach: its full passes stalled the GUI thread ~60 ms while the Overview loaded
            # (benchmarks/overview_benchmark.py); refcounting still frees these objects.
            gc.freeze()
        if self.overview_window is None:
            self.overview_window = OverviewWindow(self._runner, self)
            self.overview_window.thread_requested.connect(self._on_overview_thread_requested)
        self._load_overview()
        self.overview_window.show()
        self.overview_window.raise_()
        return self.overview_window

    def _load_overview(self) -> None:
        """Fill the Overview with the open database's OM threads (it follows File ▸ Open and every refresh)."""
        rows = self.thread_model.all_threads()
        self.overview_window.load([r.thread for r in rows if r.has_om], use_helper=self._use_helper,
                                  without_om=sum(1 for r in rows if not r.has_om), database=self._path)

    def _overview_follows(self, *, listed: bool) -> None:
        """Keep an open Overview on the open database: emptied when another file opens, refilled once LISTED."""
        overview = self.overview_window
        if overview is None or not overview.isVisible():
            return
        if listed:
            self._load_overview()
        else:
            overview.load([], database=self._path)

    def _on_overview_thread_requested(self, thread_id: str) -> None:
        if self.overview_window is None or self.overview_window.database != self._path:
            return   # a point of another file's Overview
        if self.select_thread(thread_id):
            self.raise_()
            self.activateWindow()

    def _write_session(self):
        """Return the window's WriteSession (one backup per file before its first write), shared by every write."""
        actions = getattr(self, "history_actions", None)
        return getattr(actions, "session", None)

    def _on_reflect_dialog_finished(self, dialog, _result: int) -> None:
        if self.reflect_dialog is dialog:
            self.reflect_dialog = None
        dialog.deleteLater()

    def _on_write_failed(self, _message: str) -> None:
        """A write was refused or failed (nothing written): re-read, in case another process changed the file."""
        self.refresh()

    def _on_generation_written(self, row: dict) -> None:
        """A reflection or a revert was committed: say so and re-read the database (History shows it)."""
        generation = row.get("generationCount") if isinstance(row, dict) else None
        self.history_actions.announce_written(self._path, f"Generation {generation} of {row.get('lookupKey', '')} "
                                                          "written.")
        self.refresh()
