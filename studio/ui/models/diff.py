"""Rows of a generation diff, unified (one column of lines) or side by side (older | newer).

Unified columns: marker, old line number, new line number, text. Side by side: marker, number and
text of the older generation, then the same three of the newer one. The +/− marker always comes
first, before the priority dot the text column draws.
"""

from __future__ import annotations

from enum import Enum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QFont

from studio.app import text as fmt
from studio.engine.diff import DiffRow, GenerationDiff, side_by_side
from studio.engine.observations import classify
from studio.ui.models.base import TableModel
from studio.ui.models.roles import RAW_ROLE, RECORD_ROLE
from studio.ui.style import DIFF_BACKGROUND, DIFF_FOREGROUND, DIFF_MARKER, LOSS_BACKGROUND, priority_icon

#: Op of a row, for views and tests: "kept" | "added" | "removed" (side by side: the side's op or None).
OP_ROLE = Qt.ItemDataRole.UserRole.value + 20


class DiffMode(str, Enum):  # noqa: UP042  (StrEnum would change what str() and format() of a member give)
    """How the diff is laid out."""

    UNIFIED = "unified"
    SIDE_BY_SIDE = "side_by_side"


def display_line(raw: str) -> str:
    """Return a log line for display: the priority emoji dropped (an icon shows it), indentation kept."""
    line = classify(raw)
    if line.kind != "observation":
        return raw.rstrip()
    indent = "    " * line.depth
    arrow = "→ " if line.depth else ""
    time = f"({line.time}) " if line.time else ""
    return f"{indent}{arrow}{time}{line.text}"


def line_priority(raw: str):
    """Return the Priority of a raw log line, or None."""
    line = classify(raw)
    return line.priority if line.kind == "observation" else None


UNIFIED_COLUMNS = 4
SIDE_COLUMNS = 6
LOSS_TIP = "High-priority observation removed: its text appears nowhere in the newer generation"


class DiffModel(TableModel):
    """A GenerationDiff as table rows; `set_mode` switches between unified and side-by-side layouts."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._diff: GenerationDiff | None = None
        self._mode = DiffMode.UNIFIED
        self._pairs: list[tuple[DiffRow | None, DiffRow | None]] = []
        self._old_label = "Older"
        self._new_label = "Newer"

    # -- feeding ---------------------------------------------------------------------------

    @property
    def diff(self) -> GenerationDiff | None:
        """Return the diff shown, or None."""
        return self._diff

    @property
    def mode(self) -> DiffMode:
        """Return the layout."""
        return self._mode

    def set_diff(self, diff: GenerationDiff | None, old_label: str = "Older", new_label: str = "Newer") -> None:
        """Show DIFF; OLD_LABEL/NEW_LABEL name the two generations in the headers."""
        self.beginResetModel()
        self._diff = diff
        self._old_label, self._new_label = old_label, new_label
        self._pairs = side_by_side(diff) if diff is not None else []
        self.endResetModel()

    def set_mode(self, mode: DiffMode) -> None:
        """Lay the rows out as MODE."""
        mode = DiffMode(mode)
        if mode == self._mode:
            return
        self.beginResetModel()
        self._mode = mode
        self.endResetModel()

    # -- Qt model API ----------------------------------------------------------------------

    def rowCount(self, parent=QModelIndex()) -> int:
        if parent.isValid() or self._diff is None:
            return 0
        return len(self._diff.rows) if self._mode == DiffMode.UNIFIED else len(self._pairs)

    def columnCount(self, parent=QModelIndex()) -> int:
        if parent.isValid():
            return 0
        return UNIFIED_COLUMNS if self._mode == DiffMode.UNIFIED else SIDE_COLUMNS

    def text_columns(self) -> tuple[int, ...]:
        """Return the columns holding log lines (the views stretch them)."""
        return (3,) if self._mode == DiffMode.UNIFIED else (2, 5)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal or role != Qt.ItemDataRole.DisplayRole \
                or not (0 <= section < self.columnCount()):
            return None
        if self._mode == DiffMode.UNIFIED:
            return ["", "Old", "New", f"{self._old_label} → {self._new_label}"][section]
        return ["", "Old", self._old_label, "", "New", self._new_label][section]

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < self.rowCount()):
            return None
        if self._mode == DiffMode.UNIFIED:
            return self._unified(self._diff.rows[index.row()], index.column(), role)
        old, new = self._pairs[index.row()]
        is_old = index.column() < 3
        return self._side(old if is_old else new, index.column() % 3, role, is_old=is_old)

    # -- helpers ---------------------------------------------------------------------------

    def _unified(self, row: DiffRow, col: int, role: int):
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return DIFF_MARKER[row.op]
            if col == 1:
                return "" if row.old_number is None else str(row.old_number)
            if col == 2:
                return "" if row.new_number is None else str(row.new_number)
            return display_line(row.text)
        if role == Qt.ItemDataRole.DecorationRole and col == 3:
            return priority_icon(line_priority(row.text))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 1, 2):
            return int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter) if col == 0 else \
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return self._common(row, role)

    def _side(self, row: DiffRow | None, col: int, role: int, *, is_old: bool):
        if row is None:
            if role == Qt.ItemDataRole.BackgroundRole:
                return QBrush(Qt.GlobalColor.transparent)
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return DIFF_MARKER[row.op]
            if col == 1:
                number = row.old_number if is_old else row.new_number
                return "" if number is None else str(number)
            return display_line(row.text)
        if role == Qt.ItemDataRole.DecorationRole and col == 2:
            return priority_icon(line_priority(row.text))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (0, 1):
            return int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignVCenter) if col == 0 else \
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return self._common(row, role)

    def _common(self, row: DiffRow, role: int):
        if role == Qt.ItemDataRole.BackgroundRole:
            colour = LOSS_BACKGROUND if row.high_priority_loss else DIFF_BACKGROUND[row.op]
            return QBrush(colour) if colour is not None else None
        if role == Qt.ItemDataRole.ForegroundRole:
            return QBrush(DIFF_FOREGROUND[row.op])
        if role == Qt.ItemDataRole.FontRole and row.high_priority_loss:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = f"{row.op}\n{row.text}"
            return fmt.plain_tooltip(f"{LOSS_TIP}\n\n{tip}" if row.high_priority_loss else tip)
        if role == OP_ROLE:
            return row.op
        if role == RAW_ROLE:
            return row.text
        if role == RECORD_ROLE:
            return row
        return None
