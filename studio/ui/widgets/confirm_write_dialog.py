"""The dialog every confirmed thread write asks with (clone, delete, clear, delete thread, edit, undo).

`ConfirmWriteDialog` says what the write does and where its backup goes (plain text), optionally takes a
clone's options, and stays open while the write runs: `finish()` closes it after success, `refuse()` shows
why nothing was written and keeps what the user typed. `studio.ui.widgets.edit_thread_dialog` extends it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLineEdit, QSizePolicy, QSpinBox, QVBoxLayout

from studio.ui.screen import DIALOG_SHARE, available_area
from studio.ui.widgets.common import plain_label

MAX_MESSAGE_LIMIT = 10_000_000
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
