"""Thread ▸ Export Thread… (JSON in Mastra's message format, or a Markdown transcript) and Help ▸ About.

`ExportActions` is a part of `MainWindow`: it owns the two actions (the window puts them in its menus),
asks where to save (a file dialog whose filter picks the format), reads and writes on the database worker
(`studio.app.export`: written atomically, never over the database), and says what happened in the status
bar, or through the window's interaction when it failed.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from studio.app import text as fmt
from studio.app.export import export_text, write_export
from studio.app.thread_detail import ThreadDetail
from studio.ui.context import WindowContext

#: File-dialog filters and the format each writes.
EXPORT_FILTERS = {"JSON, Mastra's message objects (*.json)": "json", "Markdown transcript (*.md)": "markdown"}


def _safe_file_name(text: str) -> str:
    keep = "".join(c if c.isalnum() or c in "-_." else "-" for c in text).strip("-.")
    return keep[:80] or "thread"


class ExportActions(QObject):
    """Export Thread… and About… of a main window (WINDOW: its thread view, database path and status bar)."""

    def __init__(self, ctx: WindowContext, window):
        super().__init__(window)
        self._ctx = ctx
        self._window = window
        self.export_action = QAction("E&xport Thread…", window, shortcut=QKeySequence("Ctrl+Shift+S"),
                                     enabled=False, triggered=self._on_export_action_triggered)
        self.export_action.setToolTip("Save the thread shown as JSON (Mastra's message objects) or as a Markdown "
                                      "transcript")
        self.about_action = QAction("&About Memory Studio", window, triggered=self.show_about)
        self.about_dialog = None

    def follow_detail(self, detail: ThreadDetail | None) -> None:
        """Enable Export Thread… when a thread is shown (DETAIL), else disable it."""
        self.export_action.setEnabled(detail is not None and not detail.orphan)

    def _on_export_action_triggered(self, _checked: bool = False) -> None:
        detail = self._window.thread_view.detail
        if detail is None:
            self._window.statusBar().showMessage("Select a thread to export.", 5000)
            return
        base = Path(self._window.open_dialog_directory()) / _safe_file_name(detail.thread.id)
        path, chosen = QFileDialog.getSaveFileName(self._window, "Export thread", str(base) + ".json",
                                                   ";;".join(EXPORT_FILTERS))
        if path:
            fmt_name = "markdown" if path.lower().endswith(".md") else EXPORT_FILTERS.get(chosen, "json")
            self.export_thread(detail.thread.id, path, fmt_name)

    def export_thread(self, thread_id: str, path: str, fmt_name: str) -> None:
        """Read THREAD_ID on the database worker and write it to PATH in FMT_NAME ("json" or "markdown")."""
        store_path = self._window.database_path
        bar = self._window.statusBar()
        bar.showMessage(f"Exporting thread {thread_id}…")

        def work(store, _progress, _cancel):
            return write_export(export_text(store, thread_id, fmt_name), path, store_path=store_path)

        self._ctx.runner.submit(work, on_done=lambda dest: bar.showMessage(f"Exported thread {thread_id} to {dest}",
                                                                           8000),
                                on_error=self._on_export_failed, key="export")

    def _on_export_failed(self, exc: Exception) -> None:
        self._window.statusBar().clearMessage()
        self._ctx.interaction.report("Export failed", f"The thread was not exported: {fmt.read_failure(exc)}")

    def show_about(self, _checked: bool = False) -> None:
        """Help ▸ About Memory Studio."""
        from studio.ui.widgets.about_dialog import AboutDialog

        self.about_dialog = AboutDialog(self._ctx.settings, self._window)
        self.about_dialog.open()
