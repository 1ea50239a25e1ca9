"""The Preview / Cancel / progress row the OM write dialogs share (the frame of the preview-then-write dialogs
is `studio.ui.widgets.write_dialog.PreviewWriteDialog`; their writes go through `write_protocol`)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QProgressBar, QPushButton, QWidget

from studio.ui.widgets.common import ElidedLabel


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
