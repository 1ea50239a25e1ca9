"""Small widget helpers: plain-text labels (stored content is never markup), empty states, tables."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QProgressBar,
    QSizePolicy,
    QTableView,
    QWidget,
)


def plain_label(text: str = "", role: str | None = None, *, wrap: bool = False,
                selectable: bool = True, parent: QWidget | None = None) -> QLabel:
    """Return a QLabel that shows TEXT literally (never as rich text), styled by ROLE."""
    label = QLabel(parent)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    label.setWordWrap(wrap)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    if role:
        set_role(label, role)
    return label


def set_role(widget: QWidget, role: str) -> None:
    """Set WIDGET's style-sheet role (the `role` property) and re-polish it."""
    if widget.property("role") == role:
        return
    widget.setProperty("role", role)
    widget.style().unpolish(widget)
    widget.style().polish(widget)


def empty_state(text: str, parent: QWidget | None = None) -> QLabel:
    """Return a centred, muted, word-wrapped label for an empty pane."""
    label = plain_label(text, "empty", wrap=True, selectable=False, parent=parent)
    label.setAlignment(Qt.AlignmentFlag.AlignCenter)
    label.setMargin(24)
    return label


class ElidedLabel(QLabel):
    """A plain-text label that elides each line that does not fit ("home network …") and may shrink to nothing.

    `text()` keeps the full text; the caller sets a tooltip with it.
    """

    def __init__(self, text: str = "", role: str | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setText(text)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        if role:
            set_role(self, role)

    def minimumSizeHint(self):
        hint = super().minimumSizeHint()
        hint.setWidth(0)
        return hint

    def is_elided(self) -> bool:
        """Return True when a line of the text is wider than the label."""
        fm, width = self.fontMetrics(), self.contentsRect().width()
        return any(fm.horizontalAdvance(line) > width for line in self.text().split("\n"))

    def paintEvent(self, _event) -> None:
        painter = QPainter(self)
        rect: QRect = self.contentsRect()
        fm = self.fontMetrics()
        shown = "\n".join(fm.elidedText(line, Qt.TextElideMode.ElideRight, rect.width())
                          for line in self.text().split("\n"))
        self.style().drawItemText(painter, rect, int(self.alignment()), self.palette(), self.isEnabled(), shown,
                                  self.foregroundRole())
        painter.end()


class OneLineProgressBar(QProgressBar):
    """A QProgressBar whose size hints fit its text on one line: FORMAT (Qt's %v / %m / %p) with SAMPLE
    standing in for the widest value and maximum (six digits by default), plus the frame and some air.

    Qt's own hint is a fixed ~100 px whatever the text, so a status bar squeezed it below
    "Statuses 0 / 5006" and the text wrapped onto two clipped lines.
    """

    def __init__(self, text_format: str, sample: str = "000000", parent: QWidget | None = None):
        super().__init__(parent)
        self.setTextVisible(True)
        self.setFormat(text_format)
        self._sample = text_format.replace("%v", sample).replace("%m", sample).replace("%p", "100")
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        """Return a size that shows the widest text whole, on one line (pixels)."""
        metrics = self.fontMetrics()
        width = max(metrics.horizontalAdvance(self._sample), metrics.horizontalAdvance(self.text())) + 24
        return QSize(width, max(16, metrics.height() + 2))

    def minimumSizeHint(self) -> QSize:
        """The same as sizeHint: below it the text no longer fits."""
        return self.sizeHint()


class RowTableView(QTableView):
    """A QTableView where Tab leaves the table, and Home/End go to the first/last row.

    End first asks the model for every row (`fetch_all`, when it has one) and emits `end_requested`,
    so a model that loads in the background can keep loading up to its end.
    """

    end_requested = Signal()

    def moveCursor(self, cursorAction: QAbstractItemView.CursorAction, modifiers) -> QModelIndex:
        action = QAbstractItemView.CursorAction
        if cursorAction in (action.MoveHome, action.MoveEnd):
            if cursorAction == action.MoveEnd:
                fetch_all = getattr(self.model(), "fetch_all", None)
                if callable(fetch_all):
                    fetch_all()
                self.end_requested.emit()
            modifiers = modifiers | Qt.KeyboardModifier.ControlModifier
        return super().moveCursor(cursorAction, modifiers)


def table_view(parent: QWidget | None = None, *, stretch_last: bool = True) -> QTableView:
    """Return a read-only, row-selecting, compact table (Tab moves to the next pane, Home/End to the first/last row)."""
    view = RowTableView(parent)
    view.setTabKeyNavigation(False)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.setShowGrid(False)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.TextElideMode.ElideRight)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 10)
    view.horizontalHeader().setStretchLastSection(stretch_last)
    view.horizontalHeader().setHighlightSections(False)
    view.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
    return view
