"""Thread ▸ Edit Thread…: a thread's title and metadata, written as Mastra's Memory.updateThread writes them.

Mastra merges the metadata it is given into the stored object key by key (`{...stored, ...given}`): a key is
replaced or added, never removed. The dialog shows the stored metadata as JSON to edit, checks it as the user
types (a JSON object), and says what will be written: the keys that change, and the keys removed in the editor
that Mastra's update keeps (set one to null to clear it). Only changed keys are sent.

*Pin this title* sets `metadata.titlePinned` (true or false), the flag Mastra's `session.thread.rename()` sets and
Observational Memory's title extraction respects (`resolveThreadTitleUpdate`: a pinned title is never replaced).
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLineEdit, QPlainTextEdit

from studio.store.records import Thread
from studio.ui.widgets.common import plain_label
from studio.ui.widgets.confirm_write_dialog import ConfirmWriteDialog


def metadata_patch(stored: dict, edited: dict) -> tuple[dict, list[str]]:
    """Return (the keys of EDITED that differ from STORED or are new, the keys of STORED that EDITED leaves out).

    The patch is what Memory.updateThread is given; the left-out keys stay in the stored metadata (merge).
    """
    patch = {k: v for k, v in edited.items() if k not in stored or stored[k] != v
             or type(stored[k]) is not type(v)}
    return patch, [k for k in stored if k not in edited]


class EditThreadDialog(ConfirmWriteDialog):
    """Edit THREAD's title and metadata; `values()` gives Memory.updateThread's {title, metadata} (None: unchanged)."""

    def __init__(self, thread: Thread, text: str, backup_note: str, parent=None):
        super().__init__("Edit Thread", text, backup_note, action="Save", parent=parent)
        self._thread = thread
        self._stored: dict = thread.metadata if isinstance(thread.metadata, dict) else {}
        form = QFormLayout()
        self.title_edit = QLineEdit(thread.title or "")
        self.title_edit.setPlaceholderText("(no title)")
        self.metadata_edit = QPlainTextEdit()
        self.metadata_edit.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.metadata_edit.setPlainText(json.dumps(self._stored, ensure_ascii=False, indent=2))
        self.metadata_edit.setTabChangesFocus(True)
        self.metadata_edit.setMinimumHeight(self.fontMetrics().lineSpacing() * 8)
        self.pin_box = QCheckBox("Pin this title (metadata.titlePinned): Observational Memory's extracted titles "
                                 "never replace it")
        self.pin_box.setChecked(self._stored.get("titlePinned") is True)
        form.addRow("Title", self.title_edit)
        form.addRow("", self.pin_box)
        form.addRow("Metadata", self.metadata_edit)
        self.check = plain_label("", "muted", wrap=True)
        self.layout().insertLayout(1, form)
        self.layout().insertWidget(2, self.check)
        self.title_edit.textChanged.connect(self._update_check)
        self.metadata_edit.textChanged.connect(self._update_check)
        self.pin_box.toggled.connect(self._update_check)
        if thread.metadata_error:
            self.metadata_edit.setReadOnly(True)
        self._update_check()

    def _edited(self) -> tuple[dict | None, str | None]:
        """Return (the metadata typed, None) or (None, why it cannot be written)."""
        if self._thread.metadata_error:
            return None, (f"The stored metadata cannot be read ({self._thread.metadata_error}); Mastra's update "
                          "would fail on it too.")
        try:
            value = json.loads(self.metadata_edit.toPlainText() or "{}")
        except ValueError as exc:
            return None, f"The metadata is not valid JSON: {exc}."
        if not isinstance(value, dict):
            return None, 'The metadata must be a JSON object: {"key": value, …}.'
        return value, None

    def values(self) -> dict[str, Any]:
        """Return {"title": new title or None (unchanged), "metadata": the changed keys or None}; {} when invalid."""
        edited, problem = self._edited()
        if problem is not None:
            return {}
        patch, _kept = metadata_patch(self._stored, edited)
        if self.pin_box.isChecked() != (self._stored.get("titlePinned") is True) and "titlePinned" not in patch:
            patch["titlePinned"] = self.pin_box.isChecked()
        title = self.title_edit.text()
        return {"title": title if title != (self._thread.title or "") else None, "metadata": patch or None}

    def _update_check(self) -> None:
        edited, problem = self._edited()
        if problem is not None:
            self.check.setText(problem)
            self.ok_button.setEnabled(False)
            return
        values = self.values()
        patch = values["metadata"] or {}
        _patch, kept = metadata_patch(self._stored, edited)
        parts = []
        if values["title"] is not None:
            parts.append("the title")
        if patch:
            parts.append(f"metadata key{'s' if len(patch) != 1 else ''} {', '.join(sorted(patch))}")
        text = ("Will write " + " and ".join(parts) + ", and set updatedAt to now." if parts
                else "Nothing changed yet.")
        if kept:
            text += (f" Removed here but kept by Mastra's update (it merges keys): {', '.join(kept)}; set a key "
                     "to null to clear its value.")
        self.check.setText(text)
        self.ok_button.setEnabled(bool(parts))

    def accept(self) -> None:
        """Confirm only a valid change (the Save button is disabled otherwise)."""
        if not self.values() or not any(v is not None for v in self.values().values()):
            return
        super().accept()

    def refuse(self, sentence: str) -> None:
        """Show why nothing was written and re-check the fields (Save enabled again for a valid change)."""
        super().refuse(sentence)
        self._update_check()
