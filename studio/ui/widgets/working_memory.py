"""Thread ▸ Working memory: the thread's (`metadata.workingMemory`) and the resource's working memory.

Mastra's agent reads one of them, chosen by the app's `workingMemory.scope` ('resource' by
default, or 'thread'); the scope is configuration, not data, so the tab says which one applies
from what is stored. Both texts are markdown shown as plain text (stored data is never markup).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QPushButton, QSplitter, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.app.thread_detail import WorkingMemoryInfo, load_working_memory
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

APPLIES = "applies"


class WorkingMemoryTab(QWidget):
    """Show a thread's and its resource's working memory and which one Mastra's agent reads.

    `edit_requested` asks the window to open Edit Working Memory (the Edit… button).
    """

    edit_requested = Signal()

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._thread_id: str | None = None
        self.info: WorkingMemoryInfo | None = None
        self.explanation = plain_label("", wrap=True)
        self.thread_heading = plain_label("Thread working memory", "heading", wrap=True)
        self.thread_text = QPlainTextEdit()
        self.thread_text.setReadOnly(True)
        self.resource_heading = plain_label("Resource working memory", "heading", wrap=True)
        self.resource_text = QPlainTextEdit()
        self.resource_text.setReadOnly(True)

        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        for heading, text in ((self.thread_heading, self.thread_text), (self.resource_heading, self.resource_text)):
            box = QWidget()
            bl = QVBoxLayout(box)
            bl.setContentsMargins(0, 0, 0, 0)
            bl.addWidget(heading)
            bl.addWidget(text)
            split.addWidget(box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setToolTip("Edit the thread's or the resource's working memory (Thread ▸ Edit Working "
                                    "Memory…), written as Mastra's Memory.updateWorkingMemory writes it")
        self.edit_button.clicked.connect(self.edit_requested)
        self.edit_button.setEnabled(False)
        top = QHBoxLayout()
        top.addWidget(self.explanation, 1)
        top.addWidget(self.edit_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(top)
        layout.addWidget(split, 1)

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's working memory (None: none), read in the background."""
        self._thread_id = thread_id
        self._show(None)
        if thread_id is not None:
            self.explanation.setText("Loading…")
            self.refresh()

    def refresh(self) -> None:
        """Re-read the working memory of the thread shown."""
        thread_id = self._thread_id
        if thread_id is None:
            return
        self._runner.submit(lambda store, _p, _c: load_working_memory(store, thread_id),
                            on_done=lambda info: self._on_loaded(thread_id, info),
                            on_error=lambda exc: self._on_failed(thread_id, exc), key="working-memory")

    def _on_loaded(self, thread_id: str, info: WorkingMemoryInfo | None) -> None:
        if thread_id == self._thread_id:
            self._show(info)

    def _on_failed(self, thread_id: str, exc: Exception) -> None:
        if thread_id == self._thread_id:
            self.explanation.setText(f"The working memory could not be read: {fmt.read_failure(exc)}")

    def _show(self, info: WorkingMemoryInfo | None) -> None:
        self.info = info
        self.edit_button.setEnabled(info is not None)
        if info is None:
            self.explanation.setText("")
            for text in (self.thread_text, self.resource_text):
                text.setPlainText("")
            self.thread_heading.setText("Thread working memory")
            self.resource_heading.setText("Resource working memory")
            return
        self.explanation.setText(info.explanation)
        mark = {"thread": (f" ({APPLIES})", ""), "resource": ("", f" ({APPLIES})"),
                "either": (" (applies with scope 'thread')", " (applies with scope 'resource', the default)")}.get(
                    info.applies, ("", ""))
        self.thread_heading.setText(f"Thread working memory · metadata.workingMemory of {info.thread_id}{mark[0]}")
        self.resource_heading.setText(f"Resource working memory · mastra_resources of {info.resource_id}{mark[1]}")
        self.thread_text.setPlainText(info.thread_text or "(none stored)")
        if info.resource_text:
            self.resource_text.setPlainText(info.resource_text)
        else:
            self.resource_text.setPlainText("(none stored)" if info.resource_exists else
                                            "(none stored: the resource has no mastra_resources row)")
