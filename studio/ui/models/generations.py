"""The OM generations of a lookup key (newest first): origin, time, tokens, compression vs the previous one."""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from studio.app import text as fmt
from studio.store.records import OMRecord
from studio.ui.models.base import TableModel
from studio.ui.models.roles import ID_ROLE, RECORD_ROLE, SORT_ROLE


class GenerationColumn(IntEnum):
    """Columns of the generations table."""

    GENERATION = 0
    ORIGIN = 1
    CREATED = 2
    TOKENS = 3
    COMPRESSION = 4


HEADERS = {
    GenerationColumn.GENERATION: "Generation",
    GenerationColumn.ORIGIN: "Origin",
    GenerationColumn.CREATED: "Created",
    GenerationColumn.TOKENS: "Tokens",
    GenerationColumn.COMPRESSION: "Compression",
}
HEADER_TIPS = {
    GenerationColumn.TOKENS: "observationTokenCount: the log's size in Mastra's token estimate",
    GenerationColumn.COMPRESSION: "Tokens of the previous generation / tokens of this one (2.00× = half the size)",
}


def compression(previous: OMRecord | None, record: OMRecord) -> float | None:
    """Return previous tokens / RECORD's tokens (2.0 = half the size), None without both."""
    if previous is None or not record.observation_token_count:
        return None
    return previous.observation_token_count / record.observation_token_count


class GenerationTableModel(TableModel):
    """OM records of one lookup key, newest generation first (the first row is the current one)."""

    COLUMNS = GenerationColumn
    HEADERS = HEADERS
    HEADER_TIPS = HEADER_TIPS

    def __init__(self, parent=None):
        super().__init__(parent)
        self._records: list[OMRecord] = []

    def set_records(self, records: list[OMRecord]) -> None:
        """Show RECORDS (newest first)."""
        self.beginResetModel()
        self._records = list(records)
        self.endResetModel()

    def records(self) -> list[OMRecord]:
        """Return the records shown, newest first."""
        return list(self._records)

    def record(self, row: int) -> OMRecord | None:
        """Return the record at ROW, or None."""
        return self._records[row] if 0 <= row < len(self._records) else None

    def previous(self, row: int) -> OMRecord | None:
        """Return the generation before ROW's (the next row), or None."""
        return self.record(row + 1)

    def row_of(self, record_id: str) -> int:
        """Return the row of RECORD_ID, or -1."""
        for i, r in enumerate(self._records):
            if r.id == record_id:
                return i
        return -1

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._records)

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._records)):
            return None
        rec = self._records[index.row()]
        col = GenerationColumn(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if col == GenerationColumn.GENERATION:
                return f"{rec.generation_count} (current)" if index.row() == 0 else str(rec.generation_count)
            if col == GenerationColumn.ORIGIN:
                return rec.origin_type
            if col == GenerationColumn.CREATED:
                return fmt.local_time(rec.created_at, seconds=True)
            if col == GenerationColumn.TOKENS:
                return fmt.tokens(rec.observation_token_count)
            return fmt.ratio(compression(self.previous(index.row()), rec))
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (GenerationColumn.TOKENS, GenerationColumn.COMPRESSION):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and index.row() == 0:
            font = QFont()
            font.setBold(True)
            return font
        if role == Qt.ItemDataRole.ToolTipRole:
            return fmt.plain_tooltip(f"record {rec.id}\ncreatedAt {rec.created_at}")
        if role == SORT_ROLE:
            return rec.generation_count
        if role == ID_ROLE:
            return rec.id
        if role == RECORD_ROLE:
            return rec
        return None
