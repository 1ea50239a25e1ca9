"""Thread ▸ History: the generations of the thread's OM record and a line diff of any two of them."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from studio.engine.diff import GenerationDiff
from studio.store.records import OMRecord
from studio.ui import format as fmt
from studio.ui.loaders import ThreadDetail, diff_generations
from studio.ui.models.diff import DiffMode, DiffModel, display_line
from studio.ui.models.generations import GenerationColumn, GenerationTableModel
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import empty_state, plain_label, table_view

EMPTY_LOG = "empty log"
#: Generations visible without scrolling the generations table.
GENERATION_ROWS_SHOWN = 5
#: High-priority losses listed above the diff (the rest are the bold red rows of the diff).
LOSSES_SHOWN = 4
NO_HISTORY = "No Observational Memory record governs this thread, so there are no generations to compare."


def _generation_label(record: OMRecord, current: bool) -> str:
    return (f"{record.generation_count}{' (current)' if current else ''} · "
            f"{record.observation_token_count:,} tokens")


class HistoryTab(QWidget):
    """Generations table, two generation selectors, unified / side-by-side diff with its figures."""

    diff_shown = Signal(object)  # the GenerationDiff now displayed

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._records: list[OMRecord] = []
        self._syncing = False
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

        self.old_combo = QComboBox()
        self.new_combo = QComboBox()
        for combo in (self.old_combo, self.new_combo):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)
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
        controls.addWidget(plain_label("Compare generation", selectable=False))
        controls.addWidget(self.old_combo)
        controls.addWidget(plain_label("→", selectable=False))
        controls.addWidget(self.new_combo)

        self.summary = plain_label("", wrap=True)
        summary_row = QHBoxLayout()
        summary_row.addWidget(self.summary, 1)
        summary_row.addWidget(self.unified_button)
        summary_row.addWidget(self.side_button)
        self.losses = plain_label("", "loss", wrap=True)
        self.losses.hide()

        self.diff_model = DiffModel(self)
        self.diff_view = table_view()
        self.diff_view.setModel(self.diff_model)
        self.diff_view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.diff_view.setAlternatingRowColors(False)
        self.diff_view.verticalHeader().setDefaultSectionSize(self.diff_view.fontMetrics().height() + 6)
        self._layout_diff_columns()

        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addLayout(controls)
        ll.addLayout(summary_row)
        ll.addWidget(self.losses)
        ll.addWidget(self.diff_view, 1)

        wrapper = QWidget()
        wl = QVBoxLayout(wrapper)
        wl.setContentsMargins(10, 10, 10, 10)
        wl.addWidget(self.generations_view)
        wl.addWidget(lower, 1)
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
        self.generation_model.set_records([])
        self.diff_model.set_diff(None)
        self._stack.setCurrentIndex(0)

    def show_detail(self, detail: ThreadDetail) -> None:
        """Show DETAIL's generations; keep the compared pair when both still exist, else the current vs its predecessor."""
        if not detail.history:
            self.clear()
            return
        old_id, new_id = self._selected_ids()
        self._records = list(detail.history)
        self._stack.setCurrentIndex(1)
        self.generation_model.set_records(self._records)
        self.generations_view.resizeColumnsToContents()
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

    def _fit_generations_height(self) -> None:
        """Size the generations table for its rows (at most GENERATION_ROWS_SHOWN; it scrolls beyond)."""
        view = self.generations_view
        rows = min(max(len(self._records), 2), GENERATION_ROWS_SHOWN)
        header = view.horizontalHeader().sizeHint().height()
        view.setFixedHeight(header + rows * view.verticalHeader().defaultSectionSize() + 2 * view.frameWidth())

    def select_generation(self, row: int) -> None:
        """Select generation ROW (0 = current) and diff it against its predecessor."""
        if 0 <= row < len(self._records):
            self._syncing = True
            try:
                self.generations_view.selectRow(row)
            finally:
                self._syncing = False
            self._on_generations_current_changed(self.generation_model.index(row, 0), None)

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
            head = (f"{len(losses)} high-priority observation{'s' if len(losses) != 1 else ''} "
                    f"removed and not found anywhere in {new_label}:")
            shown = LOSSES_SHOWN
            body = "\n".join(f"  − {display_line(r.text).strip()}" for r in losses[:shown])
            more = f"\n  … and {len(losses) - shown} more (bold red rows below)" if len(losses) > shown else ""
            self.losses.setText(f"{head}\n{body}{more}")
        self.losses.setVisible(bool(losses))
        self.diff_shown.emit(diff)

    def _layout_diff_columns(self) -> None:
        header = self.diff_view.horizontalHeader()
        header.setStretchLastSection(False)
        if self.diff_model.mode == DiffMode.UNIFIED:
            for c in (0, 1, 2):
                header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
            header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        else:
            for c in (0, 2):
                header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
            for c in (1, 3):
                header.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
