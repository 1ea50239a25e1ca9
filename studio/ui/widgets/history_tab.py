"""Thread ▸ History: the generations of the thread's OM record and a line diff of any two of them."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.thread_detail import ThreadDetail, diff_generations
from studio.engine.diff import GenerationDiff, side_by_side
from studio.store.records import OMRecord
from studio.ui.interaction import QtInteraction
from studio.ui.models.diff import DiffMode, DiffModel, display_line
from studio.ui.models.generations import GenerationColumn, GenerationTableModel
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import empty_state, plain_label, table_view
from studio.ui.widgets.loss_callout import LossCallout
from studio.ui.widgets.trace_panel import TraceSearchBox

EMPTY_LOG = "empty log"
#: Generations visible without scrolling the generations table (it may be dragged smaller or larger).
GENERATION_ROWS_SHOWN = 5
#: Rows of the diff that always stay visible, however small the window.
DIFF_MIN_ROWS = 3
#: Below this height (px) of the History tab the losses callout starts collapsed to its heading.
LOSSES_EXPANDED_MIN_HEIGHT = 440
NO_HISTORY = "No Observational Memory record governs this thread, so there are no generations to compare."
BOTH_EMPTY = "Both observation logs are empty: there is nothing to compare."
IDENTICAL = "No differences: {old} and {new} have the same {n} line{s}."
REVERT_TIP = ("Write a new generation (latest + 1) whose observation log is this generation's. "
              "History stays append-only: nothing is deleted, and the revert itself can be reverted.")
def diff_table_view(model: DiffModel) -> QTableView:
    """Return a table view of MODEL styled for a generation diff (rows a line high, no alternating colours)."""
    view = table_view()
    view.setModel(model)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    view.setAlternatingRowColors(False)
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 6)
    return view


def layout_diff_columns(view, model: DiffModel) -> None:
    """Stretch the diff's text columns; give markers and line numbers fixed widths (sizing to contents would read
    every row)."""
    header = view.horizontalHeader()
    header.setStretchLastSection(False)
    fm = view.fontMetrics()
    lines = max((r.new_number or r.old_number or 0 for r in model.diff.rows), default=0) \
        if model.diff is not None else 0
    number_width = fm.horizontalAdvance("0" * max(3, len(str(lines)))) + 14
    marker_width = fm.horizontalAdvance("+") + 14
    texts = model.text_columns()
    for c in range(model.columnCount()):
        if c in texts:
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
            continue
        header.setSectionResizeMode(c, QHeaderView.ResizeMode.Fixed)
        is_marker = model.headerData(c, Qt.Orientation.Horizontal) == ""
        header.resizeSection(c, marker_width if is_marker else number_width)


def _generation_label(record: OMRecord, current: bool) -> str:
    return (f"{record.generation_count}{' (current)' if current else ''} · "
            f"{record.observation_token_count:,} tokens")


class HistoryTab(QWidget):
    """Generations table, two generation selectors, unified / side-by-side diff with its figures."""

    diff_shown = Signal(object)  # the GenerationDiff now displayed
    generation_written = Signal(object)  # a generation the Revert dialog wrote (dict): the revert, or its repair
    write_failed = Signal(str)            # why a revert wrote nothing

    def __init__(self, runner: TaskRunner, parent=None, *, settings: QSettings | None = None, write_session=None,
                 interaction: QtInteraction | None = None):
        """RUNNER reads (and a revert writes); SETTINGS keep the Revert dialog's quiet period; WRITE_SESSION is the
        window's studio.store.writes.WriteSession (routes each write's row backup), if any; INTERACTION
        the window's (the Revert dialog asks through it), if any."""
        super().__init__(parent)
        self._runner = runner
        self._settings = settings
        self._write_session = write_session
        self._interaction = interaction
        self._records: list[OMRecord] = []
        self._lookup_key: str | None = None
        #: The open database's path (set by the main window); a revert opens it for writing.
        self.database_path: str | None = None
        #: what a write's confirmation adds about the open store (a standalone MongoDB: not atomic), or None
        self.write_note: str | None = None
        #: The open Revert dialog (History ▸ Revert to this generation…), or None.
        self.revert_dialog = None
        self._syncing = False
        self._highlight: tuple[int, str] | None = None  # (line, side) to select once the diff is shown
        self._stack = QStackedWidget()
        self._stack.addWidget(empty_state(NO_HISTORY))
        self._stack.addWidget(self._build_content())
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._stack)

    def _build_content(self) -> QWidget:
        self.generation_model = GenerationTableModel(self)
        self.generations_view = table_view()
        self.generations_view.setModel(self.generation_model)
        header = self.generations_view.horizontalHeader()
        for c in GenerationColumn:
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.generations_view.selectionModel().currentRowChanged.connect(self._on_generations_current_changed)
        self.generations_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.generations_view.customContextMenuRequested.connect(self._on_generations_context_menu_requested)
        self.revert_button = QPushButton("Revert…")
        self.revert_button.setToolTip(REVERT_TIP)
        self.revert_button.setEnabled(False)
        self.revert_button.clicked.connect(self._on_revert_button_clicked)

        self.old_combo = QComboBox()
        self.new_combo = QComboBox()
        for combo in (self.old_combo, self.new_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
            combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            combo.currentIndexChanged.connect(self._on_combos_current_index_changed)
        self.unified_button = QPushButton("Unified")
        self.side_button = QPushButton("Side by side")
        self._mode_group = QButtonGroup(self)
        for b in (self.unified_button, self.side_button):
            b.setCheckable(True)
            self._mode_group.addButton(b)
        self.unified_button.setChecked(True)
        self._mode_group.buttonToggled.connect(self._on_mode_group_button_toggled)

        controls = QHBoxLayout()
        controls.addWidget(plain_label("Compare", selectable=False))
        controls.addWidget(self.old_combo, 1)
        controls.addWidget(plain_label("→", selectable=False))
        controls.addWidget(self.new_combo, 1)
        self.trace_box = TraceSearchBox(shrinkable=True)  # ThreadView sends its text to the Trace tab
        controls.addWidget(self.trace_box, 1)

        self.summary = plain_label("", wrap=True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        summary_row = QHBoxLayout()
        summary_row.addWidget(self.summary, 1)
        summary_row.addWidget(self.unified_button, 0, Qt.AlignmentFlag.AlignTop)
        summary_row.addWidget(self.side_button, 0, Qt.AlignmentFlag.AlignTop)
        summary_row.addSpacing(8)
        summary_row.addWidget(self.revert_button, 0, Qt.AlignmentFlag.AlignTop)
        self.losses = LossCallout()
        self.losses.hide()

        self.diff_model = DiffModel(self)
        self.diff_view = diff_table_view(self.diff_model)
        row_height = self.diff_view.verticalHeader().defaultSectionSize()
        self.diff_view.setMinimumHeight(self.diff_view.horizontalHeader().sizeHint().height()
                                        + DIFF_MIN_ROWS * row_height + 2 * self.diff_view.frameWidth())
        self._layout_diff_columns()
        self.diff_message = empty_state("")
        self.diff_message.setMargin(8)
        self.diff_message.hide()

        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 4, 0, 0)
        ll.setSpacing(4)
        ll.addLayout(controls)
        ll.addLayout(summary_row)
        ll.addWidget(self.losses)
        ll.addWidget(self.diff_message)
        ll.addWidget(self.diff_view, 1)

        # Generations above, the diff below; the handle between them can be dragged.
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.generations_view)
        self.splitter.addWidget(lower)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)

        wrapper = QWidget()
        wl = QVBoxLayout(wrapper)
        wl.setContentsMargins(10, 10, 10, 10)
        wl.addWidget(self.splitter)
        self._fit_generations_height()
        return wrapper

    # -- showing ---------------------------------------------------------------------------

    @property
    def has_history(self) -> bool:
        """Return True when generations are shown."""
        return self._stack.currentIndex() == 1

    def clear(self) -> None:
        """Show the empty state."""
        self._runner.cancel("diff")
        self._records = []
        self._lookup_key = None
        self._update_revert()
        self.generation_model.set_records([])
        self.diff_model.set_diff(None)
        self._stack.setCurrentIndex(0)

    def show_detail(self, detail: ThreadDetail, previous: ThreadDetail | None = None) -> None:
        """Show DETAIL's generations; keep the compared pair when both still exist, else the current vs its
        predecessor.

        PREVIOUS: the detail shown before, of the same thread (a live refresh); when its generations equal
        DETAIL's (every column of each), nothing is drawn or diffed again.
        """
        if not detail.history:
            self.clear()
            return
        if (previous is not None and detail.lookup_key == self._lookup_key and self._records
                and self._records == previous.history == detail.history):
            return
        old_id, new_id = self._selected_ids()
        self._records = list(detail.history)
        self._lookup_key = detail.lookup_key
        self._stack.setCurrentIndex(1)
        self.generation_model.set_records(self._records)
        self._fit_generations_height()
        for combo, with_empty in ((self.new_combo, False), (self.old_combo, True)):
            combo.blockSignals(True)
            combo.clear()
            for i, rec in enumerate(self._records):
                combo.addItem(_generation_label(rec, i == 0), rec.id)
            if with_empty:
                combo.addItem(EMPTY_LOG, None)
            combo.blockSignals(False)
        ids = [r.id for r in self._records]
        if new_id in ids and (old_id is None or old_id in ids):
            self._syncing = True
            try:
                self.generations_view.selectRow(ids.index(new_id))
            finally:
                self._syncing = False
            self.compare(new_id, old_id)
        else:
            self.select_generation(0)
        self._update_revert()

    def _fit_generations_height(self) -> None:
        """Give the generations table room for its rows (at most GENERATION_ROWS_SHOWN; it scrolls beyond)."""
        view = self.generations_view
        header = view.horizontalHeader().sizeHint().height()
        row = view.verticalHeader().defaultSectionSize()
        frame = 2 * view.frameWidth()
        view.setMinimumHeight(header + row + frame)
        rows = min(max(len(self._records), 2), GENERATION_ROWS_SHOWN)
        wanted = header + rows * row + frame
        total = sum(self.splitter.sizes())
        if total > 0:
            wanted = max(view.minimumHeight(), min(wanted, int(total * 0.3)))  # the diff keeps most of a short tab
            self.splitter.setSizes([wanted, max(total - wanted, 1)])
        else:
            self.splitter.setSizes([wanted, 10 * wanted])

    def select_generation(self, row: int) -> None:
        """Select generation ROW (0 = current) and diff it against its predecessor."""
        if 0 <= row < len(self._records):
            self._syncing = True
            try:
                self.generations_view.selectRow(row)
            finally:
                self._syncing = False
            self._on_generations_current_changed(self.generation_model.index(row, 0), None)

    def select_record(self, record_id: str) -> bool:
        """Select the generation with OM record id RECORD_ID (as `select_generation`); False if not listed."""
        row = self.generation_model.row_of(record_id)
        if row < 0:
            return False
        self.select_generation(row)
        return True

    def highlight_line(self, record_id: str, line_number: int, side: str = "new") -> bool:
        """Select generation RECORD_ID and, once its diff is shown, the row of its LINE_NUMBER.

        SIDE "new": the line of that generation; "old": a line of the previous one (a removed row).
        Returns False when the generation is not listed.
        """
        self._highlight = (line_number, side)
        if not self.select_record(record_id):
            self._highlight = None
            return False
        return True

    def _apply_highlight(self) -> None:
        target, self._highlight = self._highlight, None
        diff = self.diff_model.diff
        if target is None or diff is None:
            return
        number, side = target
        if self.diff_model.mode == DiffMode.UNIFIED:
            rows = [(r.old_number if side == "old" else r.new_number) for r in diff.rows]
        else:
            rows = [((a.old_number if a else None) if side == "old" else (b.new_number if b else None))
                    for a, b in side_by_side(diff)]
        if number in rows:
            row = rows.index(number)
            self.diff_view.selectRow(row)
            self.diff_view.scrollTo(self.diff_model.index(row, 0), QAbstractItemView.ScrollHint.PositionAtCenter)

    def compare(self, new_id: str, old_id: str | None) -> None:
        """Diff generation OLD_ID (None: an empty log) against NEW_ID."""
        for combo, rid in ((self.new_combo, new_id), (self.old_combo, old_id)):
            combo.blockSignals(True)
            combo.setCurrentIndex(max(0, combo.findData(rid)))
            combo.blockSignals(False)
        self._request_diff()

    def _selected_ids(self) -> tuple[str | None, str | None]:
        if not self._records:
            return None, None
        return self.old_combo.currentData(), self.new_combo.currentData()

    def _on_generations_current_changed(self, current, _previous) -> None:
        self._update_revert()
        if self._syncing:
            return
        row = current.row() if current is not None and current.isValid() else -1
        new = self.generation_model.record(row)
        if new is None:
            return
        old = self.generation_model.previous(row)
        self.compare(new.id, old.id if old else None)

    def _on_combos_current_index_changed(self, _index: int) -> None:
        self._request_diff()

    def _on_mode_group_button_toggled(self, button, checked: bool) -> None:
        if not checked:
            return
        self.diff_model.set_mode(DiffMode.SIDE_BY_SIDE if button is self.side_button else DiffMode.UNIFIED)
        self._layout_diff_columns()

    def set_mode(self, mode: DiffMode) -> None:
        """Switch the diff layout to MODE."""
        (self.side_button if DiffMode(mode) == DiffMode.SIDE_BY_SIDE else self.unified_button).setChecked(True)

    # -- diffing ---------------------------------------------------------------------------

    def _record(self, record_id: str | None) -> OMRecord | None:
        return next((r for r in self._records if r.id == record_id), None)

    def _request_diff(self) -> None:
        new = self._record(self.new_combo.currentData())
        old = self._record(self.old_combo.currentData())
        if new is None:
            return
        old_label = f"Generation {old.generation_count}" if old else "Empty log"
        new_label = f"Generation {new.generation_count}"
        self.summary.setText("Comparing…")
        self._runner.submit_pooled(lambda _p, _c: diff_generations(old, new),
                            on_done=lambda diff: self._on_diff_ready(diff, old_label, new_label),
                            key="diff")

    def _on_diff_ready(self, diff: GenerationDiff, old_label: str, new_label: str) -> None:
        self.diff_model.set_diff(diff, old_label, new_label)
        self._layout_diff_columns()
        parts = [f"{diff.kept:,} kept", f"+{diff.added:,} added", f"−{diff.removed:,} removed",
                 f"tokens {diff.old_tokens:,} → {diff.new_tokens:,} ({fmt.signed(diff.token_delta)})",
                 f"compression {fmt.ratio(diff.compression_ratio)}"]
        self.summary.setText(" · ".join(parts))
        losses = diff.high_priority_losses
        if losses:
            head = f"{len(losses)} high-priority observation{'s' if len(losses) != 1 else ''} removed"
            lines = [f"Not found anywhere in {new_label} (bold red rows in the diff):"]
            self.losses.set_losses(head, lines + [f"− {display_line(r.text).strip()}" for r in losses])
        self.losses.setVisible(bool(losses))
        self._fit_losses()
        self._show_diff_message(diff, old_label, new_label)
        self._apply_highlight()
        self.diff_shown.emit(diff)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_losses()

    def _fit_losses(self) -> None:
        """Collapse the losses callout to its heading in a short tab, unless the user chose otherwise."""
        if self.losses.user_choice is None:
            self.losses.set_expanded(self.height() >= LOSSES_EXPANDED_MIN_HEIGHT)

    def _show_diff_message(self, diff: GenerationDiff, old_label: str, new_label: str) -> None:
        """Say so in a sentence when the diff has nothing to show: two empty logs, or no line added or removed."""
        if not diff.rows:
            text = BOTH_EMPTY
        elif not diff.added and not diff.removed:
            text = IDENTICAL.format(old=old_label, new=new_label, n=f"{diff.kept:,}", s="s" if diff.kept != 1 else "")
        else:
            text = ""
        self.diff_message.setText(text)
        self.diff_message.setVisible(bool(text))
        self.diff_view.setVisible(bool(diff.rows))

    def diff_message_text(self) -> str:
        """Return the sentence shown about an empty or unchanged diff ("" when the diff has changes)."""
        return self.diff_message.text() if not self.diff_message.isHidden() else ""

    def _layout_diff_columns(self) -> None:
        layout_diff_columns(self.diff_view, self.diff_model)

    # -- reverting -------------------------------------------------------------------------

    def selected_generation(self) -> OMRecord | None:
        """Return the generation selected in the generations table, or None."""
        return self.generation_model.record(self.generations_view.currentIndex().row())

    def _update_revert(self) -> None:
        record = self.selected_generation()
        current = self._records[0] if self._records else None
        if record is None or current is None:
            self.revert_button.setText("Revert…")
            self.revert_button.setToolTip(REVERT_TIP)
            self.revert_button.setEnabled(False)
            return
        # A short label keeps the tab narrow; the tooltip says it in full.
        self.revert_button.setText("Revert…" if record.id == current.id else f"Revert to {record.generation_count}…")
        if record.id == current.id:
            tip = f"Generation {record.generation_count} is the current one: select an older generation to revert to."
        else:
            tip = f"Revert to this generation ({record.generation_count}). {REVERT_TIP}"
        self.revert_button.setToolTip(tip)
        self.revert_button.setEnabled(record.id != current.id and self.database_path is not None)

    def _on_generations_context_menu_requested(self, pos: QPoint) -> None:
        index = self.generations_view.indexAt(pos)
        record = self.generation_model.record(index.row()) if index.isValid() else None
        if record is None:
            return
        self.generations_view.selectRow(index.row())
        menu = QMenu(self)
        current = bool(self._records) and record.id == self._records[0].id
        action = menu.addAction(f"Revert to generation {record.generation_count}…")
        action.setToolTip(REVERT_TIP)
        action.setEnabled(not current and self.database_path is not None)
        action.triggered.connect(lambda _checked=False, r=record: self.revert_to(r))
        menu.popup(self.generations_view.viewport().mapToGlobal(pos))

    def _on_revert_button_clicked(self) -> None:
        record = self.selected_generation()
        if record is not None:
            self.revert_to(record)

    def revert_to(self, record: OMRecord):
        """Open the Revert dialog for RECORD (it asks, then writes through the OM write protocol); None if not possible.

        The dialog (studio.ui.widgets.revert_dialog.RevertDialog) writes a new generation whose log
        is RECORD's, opening the database for writing only after the user pressed Revert; it is
        refused when the latest generation changed since the history was read.
        """
        if not self._records or self._lookup_key is None or self.database_path is None:
            return None
        current = self._records[0]
        if record.id == current.id:
            return None
        from studio.ui.style import STYLE_SHEET
        from studio.ui.widgets.revert_dialog import RevertDialog

        if self.revert_dialog is not None:
            self.revert_dialog.close()
        dialog = RevertDialog(self._runner, self.database_path, self._lookup_key, record, current,
                              settings=self._settings, write_session=self._write_session,
                              interaction=self._interaction, write_note=self.write_note, parent=self)
        dialog.setStyleSheet(STYLE_SHEET)
        dialog.committed.connect(self.generation_written)
        dialog.write_failed.connect(self.write_failed)
        dialog.finished.connect(lambda _result, d=dialog: self._on_revert_dialog_finished(d))
        self.revert_dialog = dialog
        dialog.open()
        return dialog

    def _on_revert_dialog_finished(self, dialog) -> None:
        if self.revert_dialog is dialog:
            self.revert_dialog = None
        self._update_revert()
        dialog.deleteLater()
