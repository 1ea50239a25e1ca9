"""The studio's message box: plain text that wraps and scrolls, its buttons always on the screen.

A QMessageBox sizes itself to its text: a message that names a 1,255-character path (one word
for its line breaking) makes it wider and taller than a 1024×700 screen, its OK button out of
reach. `MessageDialog` shows the same plain text in a read-only, wrapping, scrolling view whose
size is bound by the screen's available area; a word longer than `LONG_WORD` characters (a path,
a URL) is shown elided in the middle, and the Copy button copies the whole text.
"""

from __future__ import annotations

import re

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from studio.store.target import elide_middle
from studio.ui.screen import DIALOG_SHARE, available_area

__all__ = ["LONG_WORD", "MessageDialog", "shown_text"]

#: Words (runs without white space) longer than this many characters are elided in the middle.
LONG_WORD = 100
#: The text view's preferred width (px) before the screen bounds it.
TEXT_WIDTH = 520

_WORD = re.compile(r"\S{" + str(LONG_WORD + 1) + ",}")
_ICONS = {
    QMessageBox.Icon.Critical: QStyle.StandardPixmap.SP_MessageBoxCritical,
    QMessageBox.Icon.Warning: QStyle.StandardPixmap.SP_MessageBoxWarning,
    QMessageBox.Icon.Information: QStyle.StandardPixmap.SP_MessageBoxInformation,
    QMessageBox.Icon.Question: QStyle.StandardPixmap.SP_MessageBoxQuestion,
}


def shown_text(text: str) -> str:
    """Return TEXT as the dialog shows it: every word longer than LONG_WORD characters elided in the middle."""
    return _WORD.sub(lambda m: elide_middle(m.group(0), LONG_WORD), text)


class MessageDialog(QDialog):
    """A message box of plain TEXT under TITLE, with ICON, over PARENT; buttons added with `add_button`.

    The QMessageBox calls the studio's code and tests use are kept: `text()` (the whole text, not
    the elided one), `textFormat()` (always plain text), `clickedButton()`, `setDefaultButton`.
    """

    def __init__(self, icon: QMessageBox.Icon, title: str, text: str, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self._text = text
        self._clicked: QAbstractButton | None = None
        self.icon_label = QLabel()
        pixmap = _ICONS.get(icon)
        if pixmap is not None:
            self.icon_label.setPixmap(self.style().standardIcon(pixmap).pixmap(32, 32))
        self.icon_label.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.view = QPlainTextEdit(shown_text(text))
        self.view.setReadOnly(True)
        self.view.setFrameShape(QPlainTextEdit.Shape.NoFrame)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.view.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.view.viewport().setAutoFillBackground(False)
        self.view.setStyleSheet("QPlainTextEdit { background: transparent; }")
        self.buttons = QDialogButtonBox()
        self.buttons.clicked.connect(self._on_buttons_clicked)
        copy = QPushButton("Copy")
        copy.setToolTip("Copy the whole message (paths in full) to the clipboard")
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(self._text))
        self.buttons.addButton(copy, QDialogButtonBox.ButtonRole.HelpRole)
        self._copy = copy
        top = QHBoxLayout()
        top.addWidget(self.icon_label)
        top.addWidget(self.view, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(top, 1)
        layout.addWidget(self.buttons)

    # -- the QMessageBox calls ------------------------------------------------------------------------

    def text(self) -> str:
        """Return the whole message (a long path in full: the view shows it elided)."""
        return self._text

    @staticmethod
    def textFormat() -> Qt.TextFormat:
        """Return Qt.TextFormat.PlainText: a message is never read as rich text."""
        return Qt.TextFormat.PlainText

    def add_button(self, button: str | QMessageBox.StandardButton,
                   role: QMessageBox.ButtonRole = QMessageBox.ButtonRole.AcceptRole) -> QPushButton:
        """Add a button (TEXT with ROLE, or a standard button) and return it; any button closes the dialog."""
        if isinstance(button, str):
            return self.buttons.addButton(button, QDialogButtonBox.ButtonRole(role.value))
        return self.buttons.addButton(QDialogButtonBox.StandardButton(button.value))

    def setDefaultButton(self, button: QPushButton) -> None:
        """Make BUTTON the default (Enter presses it) and give it the focus."""
        button.setDefault(True)
        button.setFocus()

    def clickedButton(self) -> QAbstractButton | None:
        """Return the button that closed the dialog (None: closed another way, e.g. Escape)."""
        return self._clicked

    def _on_buttons_clicked(self, button: QAbstractButton) -> None:
        if button is self._copy:
            return
        self._clicked = button
        role = self.buttons.buttonRole(button)
        if role in (QDialogButtonBox.ButtonRole.RejectRole, QDialogButtonBox.ButtonRole.NoRole):
            self.reject()
        else:
            self.accept()

    # -- size ------------------------------------------------------------------------------------------

    def sizeHint(self) -> QSize:
        """The text's height at TEXT_WIDTH, bound by DIALOG_SHARE of the screen: longer text scrolls."""
        area = available_area(self.parentWidget() or self)
        width = min(TEXT_WIDTH, int(area.width() * DIALOG_SHARE) - 80)
        flags = Qt.TextFlag.TextWordWrap | Qt.TextFlag.TextWrapAnywhere
        text_height = self.view.fontMetrics().boundingRect(QRect(0, 0, width, 1 << 20), flags,
                                                           self.view.toPlainText()).height() + 16
        margins = self.layout().contentsMargins()
        chrome = self.buttons.sizeHint().height() + margins.top() + margins.bottom() + self.layout().spacing() + 16
        height = min(text_height + chrome, int(area.height() * DIALOG_SHARE))
        total_width = width + self.icon_label.sizeHint().width() + 60
        return QSize(min(total_width, int(area.width() * DIALOG_SHARE)), max(height, 120))

    def showEvent(self, event) -> None:
        """Open at the size hint (bound by the screen), its maximum the screen's available area."""
        area = available_area(self.parentWidget() or self)
        self.setMaximumSize(area.size())
        self.resize(self.sizeHint())
        super().showEvent(event)
