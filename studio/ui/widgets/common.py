"""Small widget helpers: plain-text labels (stored content is never markup), empty states, tables."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableView, QWidget


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


def table_view(parent: QWidget | None = None, *, stretch_last: bool = True) -> QTableView:
    """Return a read-only, row-selecting, compact QTableView."""
    view = QTableView(parent)
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
