"""Pieces the OM write dialogs share: the Preview / Cancel / progress row, the plain-text Yes/Cancel
question, and the write-then-watch flow of an in-place write (observe, activate). The frame of the
preview-then-write dialogs themselves is `studio.ui.widgets.write_dialog.PreviewWriteDialog`.

`InPlaceWriter` runs one confirmed write on the database worker with the protocol's quiet period
(`ProtocolPanel.quiet_ms`), offers Wait / Force when the agent is active
(`ProtocolController.choice_for_refusal`), then watches the written row for the protocol's window
(`studio.app.observation.watch_in_place`): a running turn that read the row before the
commit rewrites it from its own copy; that is reported (observe again), never hidden.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QMessageBox, QProgressBar, QPushButton, QWidget

from studio.app import reflection as jobs
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel


class RunRow(QWidget):
    """Preview (PREVIEW_TIP), Cancel (Esc), an indeterminate progress bar and a one-line progress text."""

    def __init__(self, preview_tip: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.preview_button = QPushButton("&Preview")
        self.preview_button.setToolTip(preview_tip)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop the preview (Esc)")
        self.cancel_button.setEnabled(False)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 0)
        self.progress_bar.setMaximumWidth(140)
        self.progress_bar.setMaximumHeight(14)
        self.progress_bar.setTextVisible(False)
        self.progress_bar.hide()
        self.progress_label = ElidedLabel("", "muted")
        for b in (self.preview_button, self.cancel_button):
            b.setAutoDefault(False)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.preview_button)
        row.addWidget(self.cancel_button)
        row.addSpacing(6)
        row.addWidget(self.progress_bar)
        row.addWidget(self.progress_label, 1)


def ask_yes_cancel(parent: QWidget, title: str, text: str) -> bool:
    """Ask TITLE / TEXT (plain text) with Yes / Cancel (Cancel is the default); return True on Yes."""
    box = QMessageBox(QMessageBox.Icon.Question, title, text,
                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    return box.exec() == QMessageBox.StandardButton.Yes


class InPlaceWriter(QObject):
    """Run a confirmed in-place OM write with the protocol, then watch it; report through signals (GUI thread)."""

    busy = Signal(str, str)          # (what: "commit" | "wait" | "watch" | "", progress text)
    written = Signal(object)         # the write's result (as WRITE returned it)
    failed = Signal(object)          # the exception (nothing was written)
    overwritten = Signal(str)        # a running turn rewrote the row during the watch (plain text)
    finished = Signal()              # the watch ended with the write intact

    def __init__(self, runner: TaskRunner, panel: ProtocolPanel, protocol: ProtocolController, parent: QObject):
        super().__init__(parent)
        self._runner = runner
        self._panel = panel
        self._protocol = protocol
        self._stop = threading.Event()
        self._write: Callable[[int], Any] | None = None
        self._lookup_key = ""
        self._path = ""
        protocol.wait_failed.connect(self._on_wait_failed)

    def start(self, write: Callable[[int], Any], *, path: str, lookup_key: str, force: bool = False) -> None:
        """Run WRITE(quiet_ms) on the database worker (FORCE: quiet period 0; live busy flags still refuse)."""
        self._write, self._path, self._lookup_key = write, path, lookup_key
        quiet_ms = 0 if force else self._panel.quiet_ms
        self.busy.emit("commit", "Writing…")
        jobs.submit(self._runner, lambda _p, _c: write(quiet_ms), on_done=self._on_written, on_error=self._on_failed,
                    on_worker=True, key=f"inplace-write-{id(self)}")

    def stop(self) -> None:
        """Stop waiting or watching (the step ends at its next poll)."""
        self._stop.set()
        self._protocol.stop()

    def _on_failed(self, exc: Exception) -> None:
        self.busy.emit("", "")
        choice = self._protocol.choice_for_refusal(exc)  # "the agent is active": wait / force / cancel
        if choice == "force" and self._write is not None:
            self.start(self._write, path=self._path, lookup_key=self._lookup_key, force=True)
            return
        if choice == "wait" and self._write is not None:
            self.busy.emit("wait", "Waiting for the agent to be quiet…")
            write = self._write
            self._protocol.wait_then(self._lookup_key, lambda: self.start(write, path=self._path,
                                                                          lookup_key=self._lookup_key))
            return
        self.failed.emit(exc)

    def _on_wait_failed(self, text: str) -> None:
        from studio.errors import WriteRefused

        self.busy.emit("", "")
        self.failed.emit(WriteRefused("busy", f"the agent is active: {text}"))

    def _on_written(self, result: Any) -> None:
        from studio.app.observation import watch_in_place

        self.written.emit(result)
        row = result.get("row", result) if isinstance(result, dict) else {}
        record_id, text = row.get("id"), row.get("activeObservations") or ""
        activity = self._protocol.activity
        ago = activity.ago_ms if activity is not None else None
        self._stop = threading.Event()
        stop, path, key = self._stop, self._path, self._lookup_key
        self.busy.emit("watch", "Written. Watching for a running turn overwriting it…")
        jobs.submit(self._runner, lambda _p, cancel: watch_in_place(path, key, record_id, text, ago,
                                                                   lambda: stop.is_set() or cancel.is_set()),
                    on_done=self._on_watched, on_error=lambda _exc: self._on_watched(True),
                    key=f"inplace-watch-{id(self)}")

    def _on_watched(self, survived: bool) -> None:
        self.busy.emit("", "")
        if survived:
            self.finished.emit()
        else:
            self.overwritten.emit("A running agent rewrote the observation log from an older copy while the studio "
                                  "watched: the new lines are gone again (its messages are still unobserved). "
                                  "Observe again when the agent is quiet.")
