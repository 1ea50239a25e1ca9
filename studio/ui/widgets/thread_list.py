"""The middle pane: the "Threads (n)" heading, a title filter and the thread table with its two bar columns."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtWidgets import QHeaderView, QLineEdit, QVBoxLayout, QWidget

from studio.ui import format as fmt
from studio.ui.delegates import BAR_PADDING, BarDelegate
from studio.ui.models.threads import BAR_COLUMNS, ThreadColumn, ThreadTableModel
from studio.ui.widgets.common import ElidedLabel, table_view

#: Optional columns, in the order they are hidden when the pane is too narrow for every column.
OPTIONAL_COLUMNS = (ThreadColumn.RESOURCE, ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY)
#: Narrowest Title column (px) before optional columns are hidden, and in the narrowest pane.
TITLE_MIN_WIDTH = 110
TITLE_MIN_WIDTH_NARROW = 90
FILTER_PLACEHOLDER = "Filter by title or id (Ctrl+F)"


class ThreadListPane(QWidget):
    """Show MODEL's threads; the bar columns always stay visible: optional columns hide first, then bars narrow."""

    filter_changed = Signal(str)   # the title filter's new text

    def __init__(self, model: ThreadTableModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.heading = ElidedLabel("Threads", "heading")
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText(FILTER_PLACEHOLDER)
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # Ctrl+F or a click; Tab goes pane to pane
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)

        self.view = table_view()
        self.view.setModel(model)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSortIndicator(ThreadColumn.LAST_ACTIVITY, Qt.SortOrder.DescendingOrder)
        self.bar_delegate = BarDelegate(self.view)
        for col in BAR_COLUMNS:
            self.view.setItemDelegateForColumn(col, self.bar_delegate)
        fm = self.fontMetrics()
        self.widths = {
            ThreadColumn.RESOURCE: fm.horizontalAdvance("user-alice") + 20,
            ThreadColumn.MESSAGES: fm.horizontalAdvance("Messages") + 24,
            ThreadColumn.LAST_ACTIVITY: max(fm.horizontalAdvance("Last activity"), fm.horizontalAdvance("Nov 29 20:42"))
            + 26,
        }
        self.bar_width = fm.horizontalAdvance("2,488 / 30,000 · 100%") + 2 * BAR_PADDING + 12
        self.bar_min_width = max(fm.horizontalAdvance("100%") + 2 * BAR_PADDING + 16,
                                 fm.horizontalAdvance("Observe") + 16)
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(36)
        header.setSectionResizeMode(ThreadColumn.TITLE, QHeaderView.ResizeMode.Stretch)
        for col, width in self.widths.items():
            header.resizeSection(col, width)
        for col in BAR_COLUMNS:
            header.resizeSection(col, self.bar_width)
        self.view.viewport().installEventFilter(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 0, 6)
        layout.setSpacing(4)
        layout.addWidget(self.heading)
        layout.addWidget(self.filter_edit)
        layout.addWidget(self.view, 1)

    def preferred_width(self) -> int:
        """Return the width (px) that shows every column at its full width."""
        return TITLE_MIN_WIDTH + 60 + sum(self.widths.values()) + 2 * self.bar_width + 24

    def minimumSizeHint(self):
        hint = super().minimumSizeHint()
        hint.setWidth(TITLE_MIN_WIDTH_NARROW + 2 * self.bar_min_width + 16)
        return hint

    def eventFilter(self, watched, event) -> bool:
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self.fit_columns(event.size().width())
        return super().eventFilter(watched, event)

    def fit_columns(self, available: int) -> None:
        """Lay the columns out in AVAILABLE px; the bars never hide.

        Full-width bars come first: optional columns hide (Resource, then Messages, then Last activity)
        until Title and both bars fit. When even that does not fit, the bars narrow to their short form
        ("99%") and the optional columns that then fit come back (Last activity first).
        """
        header = self.view.horizontalHeader()
        shown = list(OPTIONAL_COLUMNS)
        needed = TITLE_MIN_WIDTH + sum(self.widths.values()) + 2 * self.bar_width
        while shown and needed > available:
            needed -= self.widths[shown.pop(0)]
        bar = self.bar_width
        if needed > available:
            bar = self.bar_min_width
            room = available - TITLE_MIN_WIDTH - 2 * bar
            for col in reversed(OPTIONAL_COLUMNS):
                if self.widths[col] <= room:
                    shown.append(col)
                    room -= self.widths[col]
                else:
                    break
        for col in OPTIONAL_COLUMNS:
            header.setSectionHidden(col, col not in shown)
        self.model.set_short_headers(bar < self.bar_width)
        for col in BAR_COLUMNS:
            if header.sectionSize(col) != bar:
                header.resizeSection(col, bar)

    def visible_columns(self) -> list[ThreadColumn]:
        """Return the columns shown (tests)."""
        header = self.view.horizontalHeader()
        return [c for c in ThreadColumn if not header.isSectionHidden(c)]

    def update_heading(self) -> None:
        """Show "Threads of RESOURCE (n)" for the filtered list."""
        resource = self.model.resource_filter
        n = self.model.total_rows
        where = f" of {resource}" if resource is not None else ""
        self.heading.setText(f"Threads{where} ({n:,})")
        self.heading.setToolTip(fmt.plain_tooltip(self.heading.text()))

    def focus_filter(self) -> None:
        """Put the keyboard focus in the filter box, its text selected (Ctrl+F)."""
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def _on_filter_edit_text_changed(self, text: str) -> None:
        self.model.set_text_filter(text)
        self.update_heading()
        self.filter_changed.emit(text)
