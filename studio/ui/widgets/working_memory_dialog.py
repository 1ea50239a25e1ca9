"""Thread ▸ Edit Working Memory…: the thread's or its resource's working memory, written as Mastra's
Memory.updateWorkingMemory writes it.

Which one the agent reads is its `workingMemory.scope` (configuration, not data: "resource" by default), so the
dialog asks, starting from the scope the Working memory tab says applies. The text is edited as plain text (a
markdown template's text); when the stored text is JSON (schema mode) the edit must stay valid JSON. The change
is shown as a line diff before anything is written.
"""

from __future__ import annotations

import difflib
import json

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QComboBox, QFormLayout, QPlainTextEdit

from studio.app.thread_detail import WorkingMemoryInfo
from studio.ui.widgets.common import plain_label
from studio.ui.widgets.confirm_write_dialog import ConfirmWriteDialog

#: The scope choices: (text, scope).
SCOPES = (("Resource (Mastra's default scope)", "resource"), ("Thread (workingMemory.scope: 'thread')", "thread"))


def _is_json(text: str | None) -> bool:
    if not text or text.strip()[:1] not in ("{", "["):
        return False
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def line_diff(before: str, after: str) -> str:
    """A unified line diff of BEFORE and AFTER without file headers ("" when equal)."""
    lines = list(difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=1))
    return "\n".join(lines[2:])


class WorkingMemoryDialog(ConfirmWriteDialog):
    """Edit INFO's working memory; `values()` gives {"scope", "text"} for Memory.updateWorkingMemory."""

    def __init__(self, info: WorkingMemoryInfo, text: str, backup_note: str, parent=None):
        super().__init__("Edit Working Memory", text, backup_note, action="Save", parent=parent)
        self.info = info
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.scope_combo = QComboBox()
        for label, scope in SCOPES:
            self.scope_combo.addItem(label, scope)
        self.scope_combo.setCurrentIndex(1 if info.applies == "thread" else 0)
        self.editor = QPlainTextEdit()
        self.editor.setFont(fixed)
        self.editor.setTabChangesFocus(True)
        self.editor.setMinimumHeight(self.fontMetrics().lineSpacing() * 10)
        self.diff_view = QPlainTextEdit()
        self.diff_view.setReadOnly(True)
        self.diff_view.setFont(fixed)
        self.diff_view.setMaximumHeight(self.fontMetrics().lineSpacing() * 8)
        self.check = plain_label("", "muted", wrap=True)
        form = QFormLayout()
        form.addRow("Scope", self.scope_combo)
        form.addRow("Working memory", self.editor)
        form.addRow("Changes", self.diff_view)
        self.layout().insertLayout(1, form)
        self.layout().insertWidget(2, self.check)
        self.scope_combo.currentIndexChanged.connect(self._load_scope)
        self.editor.textChanged.connect(self._update_check)
        self._load_scope()

    @property
    def scope(self) -> str:
        """The scope chosen: "resource" or "thread"."""
        return self.scope_combo.currentData()

    def stored(self) -> str:
        """The stored working memory of the chosen scope ("" when none)."""
        text = self.info.thread_text if self.scope == "thread" else self.info.resource_text
        return text or ""

    def _load_scope(self, *_args) -> None:
        self.editor.setPlainText(self.stored())
        self._update_check()

    def values(self) -> dict:
        """Return {"scope", "text"} as typed."""
        return {"scope": self.scope, "text": self.editor.toPlainText()}

    def _problem(self) -> str | None:
        text = self.editor.toPlainText()
        if _is_json(self.stored()) and not _is_json(text):
            return ("The stored working memory is JSON (schema mode): the edit must stay valid JSON "
                    "(Mastra would read it back with JSON.parse).")
        return None

    def _update_check(self) -> None:
        before, after = self.stored(), self.editor.toPlainText()
        diff = line_diff(before, after)
        self.diff_view.setPlainText(diff or "(no change)")
        problem = self._problem()
        where = (f"metadata.workingMemory of thread {self.info.thread_id}" if self.scope == "thread"
                 else f"the mastra_resources row of {self.info.resource_id}")
        self.check.setText(problem or (f"Will write {where}." if after != before else "Nothing changed yet."))
        self.ok_button.setEnabled(problem is None and after != before)

    def accept(self) -> None:
        """Confirm only a valid change."""
        if self._problem() is None and self.editor.toPlainText() != self.stored():
            super().accept()

    def refuse(self, sentence: str) -> None:
        """Show why nothing was written and allow a retry."""
        super().refuse(sentence)
        self._update_check()
