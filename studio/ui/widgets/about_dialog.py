"""Help ▸ About: the version, the Mastra packages mirrored and the studio's folders, as selectable plain text."""

from __future__ import annotations

import PySide6
from PySide6.QtCore import QSettings, Qt, qVersion
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLabel, QVBoxLayout, QWidget

from studio.app.about import about_facts


class AboutDialog(QDialog):
    """A small read-only box listing `studio.app.about.about_facts` (SETTINGS: the window's, for its file path)."""

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("About Memory Studio")
        toolkit = f"Qt {qVersion()}, PySide6 {PySide6.__version__}"
        self.facts = about_facts(settings_path=settings.fileName() if settings is not None else None,
                                 toolkit=toolkit)
        intro = QLabel("Memory Studio looks inside a Mastra agent's memory: threads, messages, Observational "
                       "Memory and its figures, as the Mastra packages below compute them.")
        intro.setWordWrap(True)
        intro.setTextFormat(Qt.TextFormat.PlainText)
        form = QFormLayout()
        for label, value in self.facts:
            text = QLabel(value)
            text.setTextFormat(Qt.TextFormat.PlainText)
            text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            text.setWordWrap(True)
            form.addRow(label, text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addStretch(1)
        layout.addWidget(buttons)
        self.setMinimumWidth(560)
        height = layout.totalHeightForWidth(560) if layout.hasHeightForWidth() else layout.sizeHint().height()
        self.resize(560, height)
