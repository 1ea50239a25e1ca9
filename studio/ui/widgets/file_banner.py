"""Banners above the panes: the open database file went away (with Reopen); the file is damaged."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPushButton

from studio.app import text as fmt
from studio.ui.widgets.common import plain_label

BANNER_STYLE = ("QFrame#fileBanner { background: #fef3c7; border: 1px solid #f59e0b; border-radius: 4px; }"
                "QFrame#fileBanner QLabel { color: #78350f; font-weight: 600; background: transparent; }")


class FileGoneBanner(QFrame):
    """A warning strip: "PATH was deleted. What you see was read before …" with a Reopen button (hidden by default)."""

    reopen_requested = Signal()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("fileBanner")
        self.setStyleSheet(BANNER_STYLE)
        self.label = plain_label("", wrap=True)
        self.reopen_button = QPushButton("Reopen")
        self.reopen_button.setToolTip("Open the file at this path again (once it is a Mastra memory.db again)")
        self.reopen_button.clicked.connect(self.reopen_requested)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.reopen_button)
        self.hide()

    def show_problem(self, path: str, problem: str) -> None:
        """Show that PATH PROBLEM ("was deleted", …); what the window shows stays, and is said to be old."""
        self.label.setText(f"⚠ {path} {problem}. The window still shows what was read before, "
                           "and no longer follows the file.")
        self.label.setToolTip(fmt.plain_tooltip(path))
        self.show()

    def text(self) -> str:
        """Return the banner's message."""
        return self.label.text()


class DamageBanner(QFrame):
    """A warning strip above the thread view: the open file is damaged where some read went (hidden by default).

    Shown once per open store (TaskRunner.store_damaged) with the read's one sentence; the tabs that
    meet the damage point to it (`common.read_failure`), the others keep showing what was read.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("fileBanner")
        self.setStyleSheet(BANNER_STYLE)
        self.label = plain_label("", wrap=True)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 10, 6)
        layout.addWidget(self.label, 1)
        self.hide()

    def show_damage(self, sentence: str) -> None:
        """Show SENTENCE (the failed read's StoreDamaged message) and what it means for the window."""
        self.label.setText(f"⚠ {sentence.rstrip('.')}. What lies in the damaged part cannot be shown (the tabs "
                           "that need it say so); everything else is shown as read.")
        self.show()

    def text(self) -> str:
        """Return the banner's message."""
        return self.label.text()
