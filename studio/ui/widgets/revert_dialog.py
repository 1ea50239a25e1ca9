"""History ▸ *Revert to this generation…*: say what is written, then write it through the OM write protocol.

The dialog is the confirmation (nothing is written until the user presses Revert) and runs the
same protocol as *Reflect now…* (`write_protocol.ProtocolPanel` / `ProtocolController`): the
agent's activity and the quiet period, shown and adjustable; "the agent is active" → wait (with
progress and Stop waiting) / force / cancel; after the commit, the watch for a running turn
overtaking the new generation, its report and the repair (or the agent's version, when the user
prefers). The write itself is `studio.store.writes.revert_to_generation` on the database worker;
the dialog never holds a connection.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from studio.app import reflection as jobs
from studio.app import text as fmt
from studio.app.failures import outcome_line, write_outcome
from studio.store.records import OMRecord
from studio.ui.interaction import QtInteraction
from studio.ui.screen import DIALOG_SHARE, fit_within_screen
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, plain_label
from studio.ui.widgets.write_protocol import ProtocolController, ProtocolPanel, dialog_interaction

TITLE = "Revert to this generation"
REVERT_REFUSALS = {
    "generation-changed": "The agent wrote a new generation meanwhile, so nothing was written. "
                          "Look at the refreshed history and revert again if you still want to.",
    "reflecting": "A running process is reflecting this record right now, so nothing was written. Try again later.",
}


def revert_refusal_text(exc: Exception) -> str:
    """Return the sentence shown when a revert was refused (WriteRefused) or failed."""
    reason = getattr(exc, "reason", None)
    return REVERT_REFUSALS.get(reason) or (str(exc) or exc.__class__.__name__)


class RevertDialog(QDialog):
    """Ask to write generation latest+1 of LOOKUP_KEY with TARGET's observation log; write it when accepted.

    CURRENT is the latest generation as the history showed it (the write is refused when it is no
    longer the latest). SETTINGS remembers the quiet period; WRITE_SESSION (studio.store.writes.
    WriteSession) routes each write's row backup. INTERACTION (the window's `QtInteraction`)
    answers the write protocol's questions, over this dialog (default: message boxes over the dialog);
    `interaction` replaces it (tests).
    """

    committed = Signal(object)   # each generation written (dict): the revert, then any repair
    write_failed = Signal(str)   # why nothing was written (plain text)

    def __init__(self, runner: TaskRunner, path: str, lookup_key: str, target: OMRecord, current: OMRecord, *,
                 settings: QSettings | None = None, write_session=None, interaction: QtInteraction | None = None,
                 write_note: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self._interaction = QtInteraction.for_dialog(self, interaction)
        self._runner = runner
        self._path = path
        self._write_note = write_note   # the store's: a standalone MongoDB server's "not atomic" (else None)
        self._key = lookup_key
        self._target = target
        self._current = current
        self._session = write_session
        self._settings = settings
        self._busy: str | None = None      # "commit" | "wait" | "watch"
        self._written = False              # the revert is in: closing now only stops the watch
        self._outdated = False             # a newer generation exists: this revert can no longer be written
        self.setWindowTitle(f"{TITLE} — generation {target.generation_count}")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setSizeGripEnabled(True)
        self._build()
        self.protocol.read_activity(lookup_key)   # "the agent is active: …" before the user decides
        self._update_buttons()

    def showEvent(self, event) -> None:
        """Open within the screen's available area (a 1024×700 screen holds the whole dialog, its buttons too)."""
        super().showEvent(event)
        fit_within_screen(self, DIALOG_SHARE)

    def _build(self) -> None:
        current, target = self._current, self._target
        self.heading = ElidedLabel(f"Revert {self._key} to generation {target.generation_count}", "heading")
        self.text = plain_label(
            f"Write generation {current.generation_count + 1} with the observation log of generation "
            f"{target.generation_count} ({target.observation_token_count:,} tokens; the current generation "
            f"{current.generation_count} has {current.observation_token_count:,}).\n\n"
            f"{fmt.changed_store_line(self._path)}\n"
            "Nothing is deleted; every generation stays in the history, and the revert itself can be reverted.",
            wrap=True)
        self.backup_note = plain_label(jobs.backup_note(self._session, self._path, self._write_note), "muted",
                                       wrap=True)
        self.backup_note.setVisible(bool(self.backup_note.text()))
        self.protocol_panel = ProtocolPanel(self._settings, wrap=True)
        self.protocol = ProtocolController(self._runner, self.protocol_panel, self._path, session=self._session,
                                           interaction=self._interaction, parent_widget=self)
        self.protocol.step.connect(self._on_protocol_step)
        self.protocol.committed.connect(self._on_protocol_committed)
        self.protocol.write_failed.connect(self._on_protocol_write_failed)
        self.protocol.wait_failed.connect(self._on_protocol_wait_failed)
        self.protocol.repaired.connect(self._on_protocol_repaired)
        self.protocol.watch_finished.connect(self._on_protocol_watch_finished)
        self.progress_label = ElidedLabel("", "muted")
        self.error_label = plain_label("", "loss", wrap=True)
        self.error_label.hide()

        buttons = QDialogButtonBox()
        self.revert_button = QPushButton(f"Revert to {target.generation_count}")
        self.revert_button.setToolTip(f"Write generation {current.generation_count + 1} with this log now")
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.addButton(self.revert_button, QDialogButtonBox.ButtonRole.AcceptRole)
        for b in (self.revert_button, self.cancel_button):
            b.setAutoDefault(False)
        self.cancel_button.setDefault(True)   # Enter does not write
        self.revert_button.clicked.connect(self._on_revert_button_clicked)
        self.cancel_button.clicked.connect(self._on_cancel_button_clicked)
        bottom = QHBoxLayout()
        bottom.addWidget(self.progress_label, 1)
        bottom.addWidget(buttons)

        layout = QVBoxLayout(self)
        layout.setSpacing(8)
        layout.addWidget(self.heading)
        layout.addWidget(self.text)
        layout.addWidget(self.backup_note)
        layout.addWidget(self.protocol_panel)
        layout.addWidget(self.error_label)
        layout.addStretch(1)
        layout.addLayout(bottom)
        self.resize(620, self.sizeHint().height())

    # -- state -----------------------------------------------------------------------------

    @property
    def busy(self) -> str | None:
        """Return what runs in the background: "commit", "wait", "watch", or None."""
        return self._busy

    interaction = dialog_interaction

    def error_text(self) -> str:
        """Return the error shown (plain text), or ""."""
        return self.error_label.text() if not self.error_label.isHidden() else ""

    def _update_buttons(self) -> None:
        busy = self._busy
        self.revert_button.setEnabled(busy is None and not self._written and not self._outdated)
        self.cancel_button.setEnabled(busy != "commit")
        self.cancel_button.setText({"wait": "Stop waiting", "watch": "Stop watching"}.get(
            busy or "", "Close" if self._written or self._outdated else "Cancel"))
        self.protocol_panel.quiet_spin.setEnabled(busy is None)

    # -- writing ---------------------------------------------------------------------------

    def revert(self, *, force: bool = False) -> bool:
        """Write the revert through the write protocol (the user pressed Revert); False when nothing was started.

        FORCE skips the quiet period (live busy flags still refuse).
        """
        if self._busy is not None or self._written or self._outdated:
            return False
        self.error_label.hide()
        path, key, session = self._path, self._key, self._session
        count, expected = self._target.generation_count, self._current.id
        self.protocol.write(key, lambda quiet_ms: jobs.revert(path, lookup_key=key, generation_count=count,
                                                                expected_record_id=expected, session=session,
                                                                quiet_ms=quiet_ms), force=force)
        return True

    def _on_protocol_step(self, what: str | None, text: str) -> None:
        self._busy = what
        if text:
            self.progress_label.setText(text)
        self._update_buttons()

    def _on_protocol_committed(self, row: dict) -> None:
        self._written = True
        self.committed.emit(row)

    def _on_protocol_repaired(self, row: dict) -> None:
        self.progress_label.setText(f"Wrote generation {row.get('generationCount')} to repair the overtaken write.")
        self.committed.emit(row)

    def _on_protocol_watch_finished(self) -> None:
        self._busy = None
        self._update_buttons()
        self.accept()

    def _fail(self, message: str, outcome: str = "Nothing was written.") -> None:
        self._busy = None
        self.error_label.setText(message)
        self.error_label.show()
        self.progress_label.setText(outcome)
        self._update_buttons()
        self.write_failed.emit(message)

    def _on_protocol_write_failed(self, exc: Exception) -> None:
        if getattr(exc, "reason", None) == "generation-changed":
            self._outdated = True   # the history moved on: revert again from the refreshed one
        prefix = "Revert refused: " if getattr(exc, "reason", None) else "Revert failed: "
        if write_outcome(exc) != "not-written":
            prefix = ""
        self._fail(prefix + revert_refusal_text(exc), outcome_line(exc))

    def _on_protocol_wait_failed(self, text: str) -> None:
        self._fail(f"Revert refused: {text}")

    # -- buttons and closing ---------------------------------------------------------------

    def _on_revert_button_clicked(self, _checked: bool = False) -> None:
        self.revert()

    def _on_cancel_button_clicked(self, _checked: bool = False) -> None:
        self.reject()

    def reject(self) -> None:
        """Esc / Cancel: stop a wait or a watch first; never close in the middle of the write."""
        if self._busy == "commit":
            return
        if self._busy in ("wait", "watch"):
            self.protocol.stop()   # the step ends at its next poll (a watch then closes the dialog)
            return
        super().reject()

    def done(self, result: int) -> None:
        self.protocol.stop()
        super().done(result)
