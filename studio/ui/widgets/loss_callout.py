"""The red "N high-priority observations removed" callout above a History diff: collapsible, scrolling."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QScrollArea, QToolButton, QVBoxLayout, QWidget

from studio.ui.widgets.common import plain_label, set_role

#: Lines of the list shown before it scrolls.
LOSS_LINES_SHOWN = 4


class LossCallout(QFrame):
    """The red "N high-priority observations removed" callout: a heading, a Hide/Show toggle, a short scrolling list."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        set_role(self, "loss")
        self.head = plain_label("", wrap=True)
        set_role(self.head, "loss-head")
        self.toggle = QToolButton()
        self.toggle.setCheckable(True)
        self.toggle.setChecked(True)
        self.toggle.setAutoRaise(True)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        self.toggle.clicked.connect(self._on_toggle_clicked)
        self.user_choice: bool | None = None   # expanded or collapsed by the user (else: by the tab's height)
        self.body = plain_label("", wrap=True)
        set_role(self.body, "loss-body")
        self.body.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.scroll = QScrollArea()
        self.scroll.setWidget(self.body)
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll.viewport().setAutoFillBackground(False)
        self.scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.body.setContentsMargins(0, 0, 0, 0)
        self.body.setMargin(0)
        self.scroll.verticalScrollBar().setSingleStep(self.body.fontMetrics().lineSpacing())
        head_row = QHBoxLayout()
        head_row.setContentsMargins(0, 0, 0, 0)
        head_row.addWidget(self.head, 1)
        head_row.addWidget(self.toggle, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 3, 4, 4)
        layout.setSpacing(2)
        layout.addLayout(head_row)
        layout.addWidget(self.scroll)
        self._on_toggle_toggled(True)

    def set_losses(self, head: str, lines: list[str]) -> None:
        """Show HEAD and one line per lost observation (plain text)."""
        self.head.setText(head)
        self.body.setText("\n".join(lines))
        self._fit_list_height()

    def _fit_list_height(self) -> None:
        """Make the list exactly as tall as its (wrapped) lines, up to LOSS_LINES_SHOWN whole lines:
        never a line cut in half at the bottom."""
        line = self.body.fontMetrics().lineSpacing()
        width = self.scroll.viewport().width()
        if self.scroll.verticalScrollBar().isVisible() or width <= 0:
            width = max(1, self.scroll.width() - self.scroll.verticalScrollBar().sizeHint().width())
        needed = self.body.heightForWidth(width) if self.body.text() else line
        rows = max(1, min(LOSS_LINES_SHOWN, -(-needed // line)))
        if self.scroll.height() != rows * line or self.scroll.minimumHeight() != rows * line:
            self.scroll.setFixedHeight(rows * line)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_list_height()

    def text(self) -> str:
        """Return the heading and the listed observations."""
        return f"{self.head.text()}\n{self.body.text()}"

    def is_expanded(self) -> bool:
        """Return True when the list is shown (not collapsed to its heading)."""
        return self.toggle.isChecked()

    def set_expanded(self, expanded: bool) -> None:
        """Show (True) or hide the list under the heading."""
        self.toggle.setChecked(expanded)

    def _on_toggle_clicked(self, checked: bool) -> None:
        self.user_choice = checked

    def _on_toggle_toggled(self, checked: bool) -> None:
        self.scroll.setVisible(checked)
        self.toggle.setText("Hide" if checked else "Show")
        self.toggle.setToolTip("Hide the list (the rows stay bold red in the diff)" if checked
                               else "List the removed high-priority observations")
