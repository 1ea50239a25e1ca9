"""The middle pane: the "Threads (n)" heading, title and metadata filters, and the thread table with its two bars.

The metadata filter (`key=value, …`, Mastra's listThreads metadata filter and its validation rules)
runs in SQL off the GUI thread (`studio.app.listing.load_metadata_thread_ids`); the model then keeps
the matching ids, so paging and sorting stay in memory and fast on large files.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLineEdit, QMenu, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.app.lineage import clone_roles
from studio.app.listing import load_metadata_thread_ids
from studio.common.metadata_filter import ValidationError, parse_key_values
from studio.ui.delegates import BAR_PADDING, BarDelegate
from studio.ui.models.threads import BAR_COLUMNS, ThreadColumn, ThreadTableModel
from studio.ui.widgets.common import ElidedLabel, plain_label, table_view

#: Optional columns, in the order they are hidden when the pane is too narrow for every column.
OPTIONAL_COLUMNS = (ThreadColumn.RESOURCE, ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY)
#: Narrowest Title column (px) before optional columns are hidden, and in the narrowest pane.
TITLE_MIN_WIDTH = 110
#: Characters of title (an "x" wide, the ellipsis included) kept before an optional column shows, and the
#: room a one-digit Health badge takes beside the title besides its digit (px, `health.HealthBadgeDelegate`).
TITLE_MIN_CHARS = 20
TITLE_BADGE_ROOM = 20
#: The bar text the bar columns are sized for until the statuses are known.
DEFAULT_BAR_TEXT = "9,999 / 9,999 · 100%"
TITLE_MIN_WIDTH_NARROW = 90
FILTER_PLACEHOLDER = "Filter by title or id (Ctrl+F)"
METADATA_PLACEHOLDER = "Metadata: key=value, … (e.g. category=billing)"
#: Milliseconds the metadata filter waits after the last keystroke.
METADATA_DELAY_MS = 350
#: The clone filter's choices: (text, the roles of `studio.app.lineage.clone_roles` it keeps; None: all).
LINEAGE_CHOICES = (("All threads", None), ("Clones only", ("clone", "both")), ("Sources only", ("source", "both")))


class ThreadListPane(QWidget):
    """Show MODEL's threads; the bar columns always stay visible: optional columns hide first, then bars narrow."""

    filter_changed = Signal(str)   # the title filter's new text

    def __init__(self, model: ThreadTableModel, parent: QWidget | None = None, *, runner=None):
        super().__init__(parent)
        self.model = model
        self._runner = runner
        self._metadata: dict | None = None
        #: the user's choice per optional column (View columns… on the header): True shown, False hidden;
        #: a column without a choice hides and comes back with the pane's width
        self._column_choice: dict[ThreadColumn, bool] = {}
        self.heading = ElidedLabel("Threads", "heading")
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText(FILTER_PLACEHOLDER)
        self.filter_edit.setClearButtonEnabled(True)
        self.filter_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # Ctrl+F or a click; Tab goes pane to pane
        self.filter_edit.textChanged.connect(self._on_filter_edit_text_changed)
        self.metadata_edit = QLineEdit()
        self.metadata_edit.setPlaceholderText(METADATA_PLACEHOLDER)
        self.metadata_edit.setToolTip("Thread metadata conditions, all required (Mastra's listThreads metadata "
                                      "filter): category=billing, priority=2, escalated=true, archivedAt=null")
        self.metadata_edit.setClearButtonEnabled(True)
        self.metadata_edit.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.metadata_edit.setVisible(runner is not None)
        self.metadata_edit.textChanged.connect(self._on_metadata_edit_text_changed)
        self.metadata_edit.returnPressed.connect(self.apply_metadata_filter)
        self.metadata_error = plain_label("", "loss", wrap=True)
        self.metadata_error.hide()
        self._metadata_timer = QTimer(self)
        self._metadata_timer.setSingleShot(True)
        self._metadata_timer.setInterval(METADATA_DELAY_MS)
        self._metadata_timer.timeout.connect(self.apply_metadata_filter)
        self.lineage_combo = QComboBox()
        for text, role in LINEAGE_CHOICES:
            self.lineage_combo.addItem(text, role)
        self.lineage_combo.setToolTip("Show every thread, only clones (Mastra's cloneThread wrote metadata.clone), "
                                      "or only the threads that clones were made from")
        self.lineage_combo.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.lineage_combo.currentIndexChanged.connect(self._apply_lineage_filter)
        self.lineage_combo.hide()   # shown when the store holds a clone
        self._roles: dict[str, str] = {}
        model.rows_replaced.connect(self._on_model_rows_replaced)
        model.cleared.connect(self._on_model_cleared)

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
        # Title comes first: users pick threads by title, so it keeps ~20 characters (and a Health badge)
        # before any optional column shows; the bars are sized from their figures, not a worst case.
        self.title_min_width = max(TITLE_MIN_WIDTH,
                                   fm.horizontalAdvance("x" * (TITLE_MIN_CHARS - 1) + "…") + 8
                                   + fm.horizontalAdvance("9") + TITLE_BADGE_ROOM)
        self._bar_texts: dict[bool, str] = {}
        self.bar_width = self._bar_width({})
        self.bar_min_width = max(fm.horizontalAdvance("100%") + 2 * BAR_PADDING + 16,
                                 fm.horizontalAdvance("Observe") + 16)
        model.dataChanged.connect(self._on_model_data_changed)
        model.modelReset.connect(self._on_model_data_changed)
        header = self.view.horizontalHeader()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setMinimumSectionSize(36)
        header.setSectionResizeMode(ThreadColumn.TITLE, QHeaderView.ResizeMode.Stretch)
        header.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        header.customContextMenuRequested.connect(self._on_header_context_menu_requested)
        header.setToolTip("Right-click to choose the columns")
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
        filters = QHBoxLayout()
        filters.setContentsMargins(0, 0, 0, 0)
        filters.addWidget(self.metadata_edit, 1)
        filters.addWidget(self.lineage_combo)
        layout.addLayout(filters)
        layout.addWidget(self.metadata_error)
        layout.addWidget(self.view, 1)

    def _bar_width(self, texts: dict[bool, str]) -> int:
        """Return the width (px) of a bar column that shows TEXTS whole (`ThreadTableModel.widest_bar_texts`).

        The over-threshold text is measured bold, as it is painted; before any status is known, a
        typical figure ("9,999 / 9,999 · 100%"). A longer bar than those measured (a later status)
        widens the columns again; a cell too narrow falls back to the short form (`delegates.bar_label`).
        """
        normal, over = texts.get(False, ""), texts.get(True, "")
        if not normal and not over:
            normal = DEFAULT_BAR_TEXT
        bold = QFont(self.font())
        bold.setBold(True)
        text = max(self.fontMetrics().horizontalAdvance(normal), QFontMetrics(bold).horizontalAdvance(over))
        return text + 2 * BAR_PADDING + 6   # bar_label wants 6 px of air inside the padded bar

    def _on_model_data_changed(self, *_args) -> None:
        texts = dict(self.model.widest_bar_texts)
        if texts != self._bar_texts:
            self._bar_texts = texts
            width = self._bar_width(texts)
            if width != self.bar_width:
                self.bar_width = width
                self.fit_columns(self.view.viewport().width())

    def preferred_width(self) -> int:
        """Return the width (px) that shows every column at its full width."""
        return self.title_min_width + 60 + sum(self.widths.values()) + 2 * self.bar_width + 24

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
        forced = [c for c in OPTIONAL_COLUMNS if self._column_choice.get(c) is True]   # the user asked for them
        auto = [c for c in OPTIONAL_COLUMNS if c not in self._column_choice]
        needed = self.title_min_width + sum(self.widths[c] for c in forced + auto) + 2 * self.bar_width
        while auto and needed > available:
            needed -= self.widths[auto.pop(0)]
        bar = self.bar_width
        if needed > available:
            bar = self.bar_min_width
            room = available - self.title_min_width - 2 * bar - sum(self.widths[c] for c in forced)
            for col in reversed(OPTIONAL_COLUMNS):
                if col in forced or col in auto or col in self._column_choice:
                    continue
                if self.widths[col] > room:
                    break
                auto.append(col)
                room -= self.widths[col]
        shown = forced + auto
        for col in OPTIONAL_COLUMNS:
            header.setSectionHidden(col, col not in shown)
        self.model.set_short_headers(bar < self.bar_width)
        for col in BAR_COLUMNS:
            if header.sectionSize(col) != bar:
                header.resizeSection(col, bar)

    def column_menu(self) -> QMenu:
        """Return the header's column chooser: each optional column checkable, and "Fit to the pane's width"."""
        menu = QMenu(self)
        header = self.view.horizontalHeader()
        for col in OPTIONAL_COLUMNS:
            name = str(self.model.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole))
            action = menu.addAction(name)
            action.setCheckable(True)
            action.setChecked(not header.isSectionHidden(col))
            action.toggled.connect(lambda checked, c=col: self.set_column_shown(c, checked))
        menu.addSeparator()
        fit = menu.addAction("Fit to the pane's width")
        fit.setToolTip("Let columns hide when the pane is narrow and come back when it widens (the default)")
        fit.triggered.connect(self.reset_columns)
        return menu

    def set_column_shown(self, column: ThreadColumn, shown: bool) -> None:
        """Show or hide the optional COLUMN whatever the pane's width (the Title column narrows for it)."""
        self._column_choice[column] = shown
        self.fit_columns(self.view.viewport().width())

    def reset_columns(self) -> None:
        """Forget the column choices: optional columns hide and come back with the pane's width."""
        self._column_choice.clear()
        self.fit_columns(self.view.viewport().width())

    def _on_header_context_menu_requested(self, pos) -> None:
        self.column_menu().popup(self.view.horizontalHeader().mapToGlobal(pos))

    def visible_columns(self) -> list[ThreadColumn]:
        """Return the columns shown (tests)."""
        header = self.view.horizontalHeader()
        return [c for c in ThreadColumn if not header.isSectionHidden(c)]

    def update_heading(self) -> None:
        """Show "Threads of RESOURCE (n)" for the filtered list."""
        resource = self.model.resource_filter
        n = self.model.total_rows
        where = f" of {resource}" if resource is not None else ""
        matching = " matching the metadata" if self.model.id_filter is not None else ""
        kind = {1: "Clones", 2: "Clone sources"}.get(self.lineage_combo.currentIndex(), "Threads")
        self.heading.setText(f"{kind}{where}{matching} ({n:,})")
        self.heading.setToolTip(fmt.plain_tooltip(self.heading.text()))

    def focus_filter(self) -> None:
        """Put the keyboard focus in the filter box, its text selected (Ctrl+F)."""
        self.filter_edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.filter_edit.selectAll()

    def apply_metadata_filter(self) -> None:
        """Read the metadata box and keep only the threads whose metadata matches (a bad condition is shown)."""
        self._metadata_timer.stop()
        try:
            metadata = parse_key_values(self.metadata_edit.text())
        except ValidationError as exc:
            self.metadata_error.setText(str(exc))
            self.metadata_error.show()
            return
        self.metadata_error.hide()
        self._metadata = metadata
        self._query_metadata()

    def _query_metadata(self) -> None:
        metadata = self._metadata
        if metadata is None or self._runner is None:
            if self._runner is not None:
                self._runner.cancel("thread-metadata")
            self._set_ids(None)
            return
        self._runner.submit(lambda store, _p, _c: load_metadata_thread_ids(store, metadata),
                            on_done=lambda ids: self._on_metadata_ids(metadata, ids),
                            on_error=self._on_metadata_failed, key="thread-metadata")

    def _on_metadata_ids(self, metadata: dict, ids: set[str]) -> None:
        if metadata == self._metadata:
            self._set_ids(ids)

    def _on_metadata_failed(self, exc: Exception) -> None:
        self.metadata_error.setText(f"The metadata filter failed: {exc}")
        self.metadata_error.show()

    def _set_ids(self, ids) -> None:
        before = self.model.id_filter
        self.model.set_id_filter(ids)
        if self.model.id_filter != before:
            self.update_heading()
            self.filter_changed.emit(self.filter_edit.text())

    def _on_metadata_edit_text_changed(self, _text: str) -> None:
        self._metadata_timer.start()

    def _on_model_rows_replaced(self) -> None:
        if self._metadata is not None:
            self._query_metadata()   # a new listing: threads may have come, gone or changed metadata
        self._roles = clone_roles([r.thread for r in self.model.all_threads()])
        self.lineage_combo.setVisible(bool(self._roles) or self.lineage_combo.currentIndex() > 0)
        self._apply_lineage_filter()

    def _apply_lineage_filter(self, *_args) -> None:
        """Keep the clones, the sources or every thread, as the clone filter says (the listing's metadata)."""
        wanted = self.lineage_combo.currentData()
        ids = None if wanted is None else {tid for tid, role in self._roles.items() if role in wanted}
        before = self.model.lineage_filter
        self.model.set_lineage_filter(ids)
        if self.model.lineage_filter != before:
            self.update_heading()
            self.filter_changed.emit(self.filter_edit.text())

    def _on_model_cleared(self) -> None:
        self._roles = {}
        self.lineage_combo.blockSignals(True)
        self.lineage_combo.setCurrentIndex(0)
        self.lineage_combo.blockSignals(False)
        self.lineage_combo.hide()
        self._metadata_timer.stop()
        self._metadata = None
        self.metadata_edit.blockSignals(True)
        self.metadata_edit.clear()
        self.metadata_edit.blockSignals(False)
        self.metadata_error.hide()

    def _on_filter_edit_text_changed(self, text: str) -> None:
        self.model.set_text_filter(text)
        self.update_heading()
        self.filter_changed.emit(text)
