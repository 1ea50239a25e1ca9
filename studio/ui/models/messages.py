"""A thread's messages, read a page at a time in the background (role, time, token counts, preview)."""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush

from studio.ui import format as fmt
from studio.ui.loaders import MessagePage, MessageRow, load_message_page
from studio.ui.models.base import TableModel
from studio.ui.models.roles import ID_ROLE, RAW_ROLE, RECORD_ROLE, SORT_ROLE
from studio.ui.style import MUTED
from studio.ui.tasks import TaskRunner

PAGE_SIZE = 100


class MessageColumn(IntEnum):
    """Columns of the message table."""

    NUMBER = 0
    ROLE = 1
    TIME = 2
    ESTIMATE = 3
    EXACT = 4
    TEXT = 5


HEADERS = {
    MessageColumn.NUMBER: "#",
    MessageColumn.ROLE: "Role",
    MessageColumn.TIME: "Time",
    MessageColumn.ESTIMATE: "Estimate",
    MessageColumn.EXACT: "Exact",
    MessageColumn.TEXT: "Text",
}
HEADER_TIPS = {
    MessageColumn.ESTIMATE: "Tokens as Mastra estimates them for its thresholds (tokenx heuristic, per message)",
    MessageColumn.EXACT: "Tokens counted exactly with the o200k_base tokenizer",
}


class MessageTableModel(TableModel):
    """Messages of one thread in storage order; pages of PAGE_SIZE rows fetched through the TaskRunner."""

    COLUMNS = MessageColumn
    HEADERS = HEADERS
    HEADER_TIPS = HEADER_TIPS

    page_loaded = Signal(int)  # rows now loaded

    def __init__(self, runner: TaskRunner, parent=None, *, page_size: int = PAGE_SIZE, key: str = "messages"):
        super().__init__(parent)
        self._runner = runner
        self._page_size = page_size
        self._key = key
        self._thread_id: str | None = None
        self._rows: list[MessageRow] = []
        self._total = 0
        self._fetching = False
        self.use_helper = False   # read pages in the TaskRunner's helper process (big databases)

    # -- feeding ---------------------------------------------------------------------------

    @property
    def thread_id(self) -> str | None:
        """Return the thread shown (None: none)."""
        return self._thread_id

    @property
    def total(self) -> int:
        """Return the thread's message count as last read."""
        return self._total

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's messages (None: none); the first page is read in the background."""
        self._runner.cancel(self._key)
        self.beginResetModel()
        self._thread_id, self._rows, self._total, self._fetching = thread_id, [], 0, False
        self.endResetModel()
        if thread_id is not None:
            self._request(0, self._page_size)

    def refresh(self) -> None:
        """Re-read the loaded rows (at least a page); new messages at the end are appended in place."""
        if self._thread_id is None:
            return
        self._request(0, max(len(self._rows), self._page_size), refresh=True)

    def message_row(self, row: int) -> MessageRow | None:
        """Return the MessageRow at ROW, or None."""
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def row_of(self, message_id: str) -> int:
        """Return the loaded row of MESSAGE_ID, or -1."""
        for i, r in enumerate(self._rows):
            if r.message.id == message_id:
                return i
        return -1

    # -- background reads ------------------------------------------------------------------

    def _request(self, offset: int, limit: int, *, refresh: bool = False) -> None:
        thread_id = self._thread_id
        self._fetching = True
        if self.use_helper:
            self._runner.submit_call(load_message_page, thread_id, offset, limit, helper=True,
                                     on_done=lambda page: self._on_page_loaded(page, refresh),
                                     on_error=self._on_page_failed, key=self._key)
            return
        self._runner.submit(
            lambda store, _progress, cancel: load_message_page(store, thread_id, offset, limit, cancel),
            on_done=lambda page: self._on_page_loaded(page, refresh),
            on_error=self._on_page_failed,
            key=self._key)

    def _on_page_failed(self, _exc: Exception) -> None:
        self._fetching = False

    def _on_page_loaded(self, page: MessagePage, refresh: bool) -> None:
        self._fetching = False
        if page.thread_id != self._thread_id:
            return
        if refresh:
            self._merge_refresh(page)
        elif page.offset == len(self._rows):
            self._total = page.total
            if page.rows:
                start = len(self._rows)
                self.beginInsertRows(QModelIndex(), start, start + len(page.rows) - 1)  # inclusive
                self._rows.extend(page.rows)
                self.endInsertRows()
        self.page_loaded.emit(len(self._rows))

    def _merge_refresh(self, page: MessagePage) -> None:
        old_ids = [r.message.id for r in self._rows]
        new_ids = [r.message.id for r in page.rows]
        self._total = page.total
        if new_ids[: len(old_ids)] == old_ids:
            for i, r in enumerate(page.rows[: len(old_ids)]):
                self._rows[i] = r
            if old_ids:
                self.dataChanged.emit(self.index(0, 0), self.index(len(old_ids) - 1, len(MessageColumn) - 1))
            extra = page.rows[len(old_ids):]
            if extra:
                start = len(self._rows)
                self.beginInsertRows(QModelIndex(), start, start + len(extra) - 1)
                self._rows.extend(extra)
                self.endInsertRows()
        else:
            self.beginResetModel()
            self._rows = list(page.rows)
            self.endResetModel()

    # -- lazy loading ----------------------------------------------------------------------

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        return (not parent.isValid() and self._thread_id is not None and not self._fetching
                and len(self._rows) < self._total)

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        if self.canFetchMore(parent):
            self._request(len(self._rows), self._page_size)

    # -- Qt model API ----------------------------------------------------------------------

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        row = self._rows[index.row()]
        m = row.message
        col = MessageColumn(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if col == MessageColumn.NUMBER:
                return str(index.row() + 1)
            if col == MessageColumn.ROLE:
                return m.role
            if col == MessageColumn.TIME:
                return fmt.short_time(m.created_at, seconds=True)
            if col == MessageColumn.ESTIMATE:
                return fmt.tokens(row.estimate)
            if col == MessageColumn.EXACT:
                return fmt.tokens(row.exact)
            text = m.text
            if not text and m.parts:
                kinds = ", ".join(sorted({str(p.get("type")) for p in m.parts if isinstance(p, dict)}))
                return f"[{kinds}]"
            return fmt.preview(text)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (
                MessageColumn.NUMBER, MessageColumn.ESTIMATE, MessageColumn.EXACT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == MessageColumn.TEXT and not m.text:
            return QBrush(MUTED)
        if role == Qt.ItemDataRole.ToolTipRole and col == MessageColumn.TIME:
            return fmt.plain_tooltip(m.created_at)
        if role == SORT_ROLE:
            return {MessageColumn.NUMBER: index.row(), MessageColumn.ROLE: m.role,
                    MessageColumn.TIME: m.created_at or "", MessageColumn.ESTIMATE: row.estimate or 0,
                    MessageColumn.EXACT: row.exact or 0, MessageColumn.TEXT: m.text}[col]
        if role == ID_ROLE:
            return m.id
        if role == RAW_ROLE:
            return m.text
        if role == RECORD_ROLE:
            return row
        return None
