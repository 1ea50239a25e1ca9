"""The status bar's notice while a read waits for another process's lock: what it waits for, and Cancel.

A rollback-journal database that an agent is writing to is locked for the length of its write;
the studio's read waits (up to `studio.store.lock_wait.LOCK_WAIT_S`) on the database worker,
sleeping in Python, so the window keeps painting. `LockWaitNotice` shows the wait as it goes
(`TaskRunner.lock_waiting`) and its Cancel stops it (`TaskRunner.stop_lock_wait`): the read then
fails with a plain sentence, as any failed read.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label


class LockWaitNotice(QWidget):
    """"Waiting for the database: another process is writing to it (N s)" with Cancel; hidden otherwise."""

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self._runner = runner
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.label = plain_label("", selectable=False)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Stop waiting for the database (the read fails; F5 tries again)")
        self.cancel_button.clicked.connect(self._stop)
        layout.addWidget(self.label)
        layout.addWidget(self.cancel_button)
        runner.lock_waiting.connect(self.show_wait)
        self.hide()

    def show_wait(self, seconds: float | None) -> None:
        """Show that a read has waited SECONDS for another process's lock (None: the wait is over)."""
        if seconds is None:
            self.hide()
            return
        self.label.setText(f"Waiting for the database: another process is writing to it ({seconds:.0f} s)…")
        self.cancel_button.setEnabled(True)
        self.show()

    def _stop(self) -> None:
        self.cancel_button.setEnabled(False)
        self._runner.stop_lock_wait()
