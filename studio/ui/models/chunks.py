"""The buffered observation chunks of an OM record (async buffering): tokens, messages, creation time."""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt

from studio.app import text as fmt
from studio.ui.models.base import TableModel
from studio.ui.models.roles import RAW_ROLE, RECORD_ROLE


class ChunkColumn(IntEnum):
    """Columns of the buffered-chunk table."""

    NUMBER = 0
    CREATED = 1
    TOKENS = 2
    MESSAGE_TOKENS = 3
    MESSAGES = 4
    OBSERVATIONS = 5


HEADERS = {
    ChunkColumn.NUMBER: "#",
    ChunkColumn.CREATED: "Created",
    ChunkColumn.TOKENS: "Observation tokens",
    ChunkColumn.MESSAGE_TOKENS: "Message tokens",
    ChunkColumn.MESSAGES: "Messages",
    ChunkColumn.OBSERVATIONS: "Observations",
}
NUMERIC = (ChunkColumn.NUMBER, ChunkColumn.TOKENS, ChunkColumn.MESSAGE_TOKENS, ChunkColumn.MESSAGES)


def _int(value) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class BufferedChunkModel(TableModel):
    """`bufferedObservationChunks` of the current record, oldest first."""

    COLUMNS = ChunkColumn
    HEADERS = HEADERS

    def __init__(self, parent=None):
        super().__init__(parent)
        self._chunks: list[dict] = []

    def set_chunks(self, chunks: list[dict]) -> None:
        """Show CHUNKS (dicts as Mastra stores them)."""
        self.beginResetModel()
        self._chunks = list(chunks)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._chunks)

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._chunks)):
            return None
        chunk = self._chunks[index.row()]
        col = ChunkColumn(index.column())
        observations = chunk.get("observations") if isinstance(chunk.get("observations"), str) else ""
        if role == Qt.ItemDataRole.DisplayRole:
            if col == ChunkColumn.NUMBER:
                return str(index.row() + 1)
            if col == ChunkColumn.CREATED:
                return fmt.local_time(chunk.get("createdAt"), seconds=True)
            if col == ChunkColumn.TOKENS:
                return fmt.tokens(_int(chunk.get("tokenCount")))
            if col == ChunkColumn.MESSAGE_TOKENS:
                return fmt.tokens(_int(chunk.get("messageTokens")))
            if col == ChunkColumn.MESSAGES:
                ids = chunk.get("messageIds")
                return str(len(ids)) if isinstance(ids, list) else fmt.NONE
            return fmt.preview(observations, 120)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col == ChunkColumn.OBSERVATIONS:
            return fmt.plain_tooltip(observations)
        if role == RAW_ROLE:
            return observations
        if role == RECORD_ROLE:
            return chunk
        return None
