"""A thread's messages, read a page at a time in the background (role, speaker, time, token counts, preview).

Unfiltered, pages are read by offset in storage order. With filters (date range, metadata, speaker,
text: `studio.app.messages.MessageFilters`) the ids of the matching messages are read first,
off the GUI thread, then pages of rows by id (Anki's browser: ids first, rows on demand), so a
20,000-message thread stays lazy either way. The Speaker column shows the `<turn>` speaker's name
and role; the Text column shows the message without its tags unless raw tags are asked for.
"""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush

from studio.app import text as fmt
from studio.app.messages import (
    FilteredIds,
    MessageFilters,
    MessagePage,
    MessageRefresh,
    MessageRow,
    load_filtered_ids,
    load_message_page,
    load_message_rows,
    refresh_message_page,
)
from studio.app.uncountable import UNCOUNTABLE_MARK
from studio.engine.speakers import MessageAttribution, SpeakerReport, analyze_messages, attribute_message
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
    SPEAKER = 6      # last in the model (shown after Role by the view: see MessagesTab)


HEADERS = {
    MessageColumn.NUMBER: "#",
    MessageColumn.ROLE: "Role",
    MessageColumn.TIME: "Time",
    MessageColumn.ESTIMATE: "Estimate",
    MessageColumn.EXACT: "Exact",
    MessageColumn.TEXT: "Text",
    MessageColumn.SPEAKER: "Speaker",
}
HEADER_TIPS = {
    MessageColumn.SPEAKER: "Who wrote a user message, from its <turn author_name=.. functional_role=..> tag",
    MessageColumn.ESTIMATE: "Tokens as Mastra estimates them for its thresholds (tokenx heuristic, per message)",
    MessageColumn.EXACT: "Tokens counted exactly with the o200k_base tokenizer",
}


#: The roles `MessageTableModel.data` answers (for some columns); every other role is None.
_ANSWERED = frozenset({Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.TextAlignmentRole, Qt.ItemDataRole.ForegroundRole,
                       Qt.ItemDataRole.ToolTipRole, SORT_ROLE, ID_ROLE, RAW_ROLE, RECORD_ROLE})
_COLUMNS = tuple(MessageColumn)


class MessageTableModel(TableModel):
    """Messages of one thread in storage order; pages of PAGE_SIZE rows fetched through the TaskRunner."""

    COLUMNS = MessageColumn
    HEADERS = HEADERS
    HEADER_TIPS = HEADER_TIPS

    page_loaded = Signal(int)  # rows now loaded
    #: a refresh's rows are in (`refresh`; before its `page_loaded`): True when they are the whole thread,
    #: unfiltered (`speaker_report`); False also when the refresh was dropped (superseded, filtered meanwhile)
    page_refreshed = Signal(bool)
    load_failed = Signal(str)  # a read failed: the error, for the tab to show

    def __init__(self, runner: TaskRunner, parent=None, *, page_size: int = PAGE_SIZE, key: str = "messages"):
        super().__init__(parent)
        self._runner = runner
        self._page_size = page_size
        self._key = key
        self._thread_id: str | None = None
        self._rows: list[MessageRow] = []
        self._total = 0
        self._fetching = False
        self._compact = False
        self._role_in_speaker = False
        self.use_helper = False   # read pages in the TaskRunner's helper process (big databases)
        self._filters = MessageFilters()
        self._ids: list[str] | None = None       # the matching ids while filtered (None: unfiltered)
        self._positions: list[int] = []          # their numbers in the whole thread (the # column while filtered)
        self._scanned = 0
        self._raw_tags = False
        self._attributions: dict[str, MessageAttribution] = {}
        self._parsed: dict[str, tuple[object, MessageAttribution]] = {}   # id -> (the Message parsed, its attribution)
        self._on_loaded_through: tuple[int, object] | None = None

    # -- feeding ---------------------------------------------------------------------------

    @property
    def thread_id(self) -> str | None:
        """Return the thread shown (None: none)."""
        return self._thread_id

    @property
    def total(self) -> int:
        """Return the thread's message count as last read."""
        return self._total

    @property
    def filters(self) -> MessageFilters:
        """Return the filters applied (MessageFilters() when none)."""
        return self._filters

    @property
    def filtered(self) -> bool:
        """Return True while filters are applied (rows are the matching messages only)."""
        return self._filters.active

    @property
    def scanned(self) -> int:
        """Return how many messages the last filtered read looked at (the thread's messages in range)."""
        return self._scanned

    def set_raw_tags(self, raw: bool) -> None:
        """Show the stored text with its `<turn>` tags (RAW) or the text without them (default)."""
        if raw != self._raw_tags:
            self._raw_tags = raw
            if self._rows:
                self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(MessageColumn) - 1))

    def set_thread(self, thread_id: str | None, filters: MessageFilters | None = None) -> None:
        """Show THREAD_ID's messages (None: none) passing FILTERS (default: none); read in the background."""
        self._runner.cancel(self._key)
        self.beginResetModel()
        self._thread_id, self._rows, self._total, self._fetching = thread_id, [], 0, False
        self._filters = filters or MessageFilters()
        self._ids, self._scanned, self._attributions, self._positions = None, 0, {}, []
        self._on_loaded_through = None
        self.endResetModel()
        if thread_id is None:
            return
        if self._filters.active:
            self._request_ids()
        else:
            self._request(0, self._page_size)

    def set_filters(self, filters: MessageFilters) -> None:
        """Apply FILTERS to the thread shown (re-reads it)."""
        if filters != self._filters:
            self.set_thread(self._thread_id, filters)

    def refresh(self) -> None:
        """Re-read the loaded rows (at least a page); new messages at the end are appended in place.

        Unfiltered, only the rows that are new or changed are counted again and repaint
        (`studio.app.messages.refresh_message_page`); the others keep their rows.
        """
        if self._thread_id is None:
            return
        if self._filters.active:
            self._request_ids(refresh=True)
            return
        thread_id, held = self._thread_id, [r.message for r in self._rows]
        limit = max(len(self._rows), self._page_size)
        self._fetching = True
        if self.use_helper:
            self._runner.submit_call(refresh_message_page, thread_id, held, limit, helper=True,
                                     on_done=self._on_page_refreshed, on_error=self._on_page_failed, key=self._key)
            return
        self._runner.submit(
            lambda store, _progress, cancel: refresh_message_page(store, thread_id, held, limit, cancel),
            on_done=self._on_page_refreshed, on_error=self._on_page_failed, key=self._key)

    def _on_page_refreshed(self, got: MessageRefresh | None) -> None:
        """Put the refreshed rows in place: changed ones repaint, new ones at the end are inserted, else a reset."""
        self._fetching = False
        if got is None or got.thread_id != self._thread_id or self._filters.active:
            if self._on_loaded_through is not None and got is not None and got.thread_id == self._thread_id:
                self._after_rows_loaded()   # a `load_through` waits: read on
            self.page_refreshed.emit(False)
            return
        old_ids = [r.message.id for r in self._rows]
        held = {r.message.id: r for r in self._rows}
        if any(mid not in got.rows and mid not in held for mid in got.ids):   # rows went meanwhile: read them all
            self._request(0, max(len(self._rows), self._page_size), refresh=True)
            return
        rows = [got.rows.get(mid) or held[mid] for mid in got.ids]
        self._total = got.total
        for mid in got.rows:
            self._attributions.pop(mid, None)
        n = len(old_ids)
        if got.ids[:n] == old_ids:
            changed = [i for i, mid in enumerate(got.ids[:n]) if mid in got.rows]
            self._rows[:n] = rows[:n]
            for i in changed:
                self.dataChanged.emit(self.index(i, 0), self.index(i, len(MessageColumn) - 1))
            if len(rows) > n:
                self.beginInsertRows(QModelIndex(), n, len(rows) - 1)   # inclusive
                self._rows.extend(rows[n:])
                self.endInsertRows()
        else:   # a message went or moved: the rows are laid out again
            self._attributions = {}
            self.beginResetModel()
            self._rows = rows
            self.endResetModel()
        self.page_refreshed.emit(self.holds_whole_thread())
        self._after_rows_loaded()

    def holds_whole_thread(self) -> bool:
        """Return True when the rows held are every message of the thread as last read, unfiltered."""
        return self._thread_id is not None and not self._filters.active and len(self._rows) == self._total

    def speaker_report(self) -> SpeakerReport | None:
        """Return the Speakers report of the thread made from the rows held, or None unless they are the whole
        thread unfiltered (`holds_whole_thread`). No read: each row's Mastra estimate is its message's tokens
        (what `studio.engine.speakers.thread_speakers` counts, 0 for an uncountable one) and a message is parsed
        for its `<turn>` tags once while its row is held, so after a live refresh only the new or changed
        messages are parsed; equal to `thread_speakers` of the same rows."""
        if not self.holds_whole_thread():
            return None
        tokens = {r.message.id: r.estimate or 0 for r in self._rows}
        parsed = {}
        for r in self._rows:
            m = r.message
            seen = self._parsed.get(m.id)
            parsed[m.id] = seen if seen is not None and seen[0] is m else (m, attribute_message(m))
        self._parsed = parsed   # the rows held now: a row gone or replaced is forgotten

        def attribute(m) -> MessageAttribution:
            return parsed[m.id][1]

        return analyze_messages([r.message for r in self._rows], thread_id=self._thread_id,
                                count_tokens=lambda m: tokens[m.id], attribute=attribute)

    def load_through(self, row: int, then=None) -> None:
        """Read rows up to ROW (one request), then call THEN() on the GUI thread (show in context)."""
        if row < len(self._rows):
            if then is not None:
                then()
            return
        self._on_loaded_through = (row, then)
        if not self._fetching:
            self._request(len(self._rows), row + 1 - len(self._rows) + self._page_size)

    def attribution(self, row: int) -> MessageAttribution | None:
        """Return how message ROW is attributed (its `<turn>` speaker), parsed once and cached."""
        r = self.message_row(row)
        if r is None:
            return None
        att = self._attributions.get(r.message.id)
        if att is None:
            att = attribute_message(r.message)
            self._attributions[r.message.id] = att
        return att

    def shown_text(self, row: int) -> str:
        """Return message ROW's text as the Text column shows it (tags removed unless raw tags are on)."""
        r = self.message_row(row)
        if r is None:
            return ""
        att = self.attribution(row)
        if self._raw_tags or att is None or not att.parse.turns:
            return r.message.text
        return att.parse.display_text()

    def speaker_text(self, row: int) -> str:
        """Return "Name (role)" of message ROW's `<turn>` speaker ("" when it has none)."""
        att = self.attribution(row)
        if att is None or not att.parse.turns:
            return ""
        first = att.parse.turns[0]
        name = first.author_name or first.author_id or "(unnamed)"
        return f"{name} ({first.functional_role})" if first.functional_role else name

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

    def _request_ids(self, *, refresh: bool = False) -> None:
        thread_id, filters = self._thread_id, self._filters
        self._fetching = True

        def on_done(found) -> None:
            self._on_ids_loaded(found, refresh)

        if self.use_helper:
            self._runner.submit_call(load_filtered_ids, thread_id, filters, helper=True, on_done=on_done,
                                     on_error=self._on_page_failed, key=self._key)
            return
        self._runner.submit(lambda store, _progress, cancel: load_filtered_ids(store, thread_id, filters, cancel),
                            on_done=on_done, on_error=self._on_page_failed, key=self._key)

    def _on_ids_loaded(self, found: FilteredIds, refresh: bool) -> None:
        self._fetching = False
        if found.thread_id != self._thread_id or found.filters != self._filters or not found.complete:
            return
        self._ids, self._scanned, self._positions = found.ids, found.scanned, found.positions
        self._total = len(found.ids)
        self._request(0, max(len(self._rows), self._page_size) if refresh else self._page_size, refresh=refresh)

    def _request(self, offset: int, limit: int, *, refresh: bool = False) -> None:
        thread_id = self._thread_id
        self._fetching = True
        if self._ids is not None:
            ids, total = self._ids[offset:offset + limit], len(self._ids)

            def on_done(page) -> None:
                self._on_page_loaded(page, refresh)

            if self.use_helper:
                self._runner.submit_call(load_message_rows, thread_id, ids, offset, total, helper=True,
                                         on_done=on_done, on_error=self._on_page_failed, key=self._key)
            else:
                self._runner.submit(
                    lambda store, _progress, cancel: load_message_rows(store, thread_id, ids, offset, total, cancel),
                    on_done=on_done, on_error=self._on_page_failed, key=self._key)
            return
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

    def _on_page_failed(self, exc: Exception) -> None:
        self._fetching = False
        self._on_loaded_through = None
        self.load_failed.emit(fmt.read_failure(exc))

    def _on_page_loaded(self, page: MessagePage, refresh: bool) -> None:
        self._fetching = False
        if page.thread_id != self._thread_id:
            return
        if refresh:
            self._merge_refresh(page)
            self.page_refreshed.emit(self.holds_whole_thread())
            self._after_rows_loaded()
            return
        if page.offset == len(self._rows):
            self._total = page.total
            if page.rows:
                start = len(self._rows)
                self.beginInsertRows(QModelIndex(), start, start + len(page.rows) - 1)  # inclusive
                self._rows.extend(page.rows)
                self.endInsertRows()
        self._after_rows_loaded()

    def _after_rows_loaded(self) -> None:
        """Say how many rows are loaded; go on reading up to the row `load_through` asked for."""
        self.page_loaded.emit(len(self._rows))
        if self._on_loaded_through is not None:
            row, then = self._on_loaded_through
            if row < len(self._rows) or len(self._rows) >= self._total:
                self._on_loaded_through = None
                if then is not None:
                    then()
            elif not self._fetching:
                self._request(len(self._rows), row + 1 - len(self._rows) + self._page_size)

    def _merge_refresh(self, page: MessagePage) -> None:
        self._attributions = {}
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

    def set_compact(self, compact: bool, role_in_speaker: bool = False) -> None:
        """Show times without seconds and the header "Est." (COMPACT True: a narrow table), or in full.

        ROLE_IN_SPEAKER: the view hides the Role column, so the Speaker column ("Who") shows the
        message's role when it has no `<turn>` speaker.
        """
        if (compact, role_in_speaker) == (self._compact, self._role_in_speaker):
            return
        self._compact, self._role_in_speaker = compact, role_in_speaker
        self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(MessageColumn) - 1)
        if self._rows:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self._rows) - 1, len(MessageColumn) - 1))

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            if self._compact and section == MessageColumn.ESTIMATE:
                return "Est."
            if self._role_in_speaker and section == MessageColumn.SPEAKER:
                return "Who"
        if role == Qt.ItemDataRole.ToolTipRole and self._role_in_speaker and section == MessageColumn.SPEAKER:
            return "The speaker of a user message (its <turn> tag), else the message's role"
        return super().headerData(section, orientation, role)

    def number(self, row: int) -> int:
        """Return ROW's message number in the whole thread (1-based): a filtered list keeps each message's own."""
        if self._ids is not None and row < len(self._positions) and self._positions[row]:
            return self._positions[row]
        return row + 1

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        # a repaint asks every visible cell for a dozen roles, most of which no column answers: those return at
        # once (no enum built, no row looked at), which halves the Messages tab's repaint after a live refresh
        if role not in _ANSWERED or not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        row = self._rows[index.row()]
        m = row.message
        col = _COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            if col == MessageColumn.NUMBER:
                return str(self.number(index.row()))
            if col == MessageColumn.ROLE:
                return m.role
            if col == MessageColumn.TIME:
                # turns are often seconds apart: seconds always; a narrow table keeps the clock (the date is in
                # the tooltip), a wide one the date too
                return fmt.clock_time(m.created_at) if self._compact else fmt.short_time(m.created_at, seconds=True)
            if col == MessageColumn.ESTIMATE:
                return UNCOUNTABLE_MARK if row.uncountable else fmt.tokens(row.estimate)
            if col == MessageColumn.EXACT:
                return fmt.tokens(row.exact)
            if col == MessageColumn.SPEAKER:
                return self.speaker_text(index.row()) or (m.role if self._role_in_speaker else "")
            text = self.shown_text(index.row())
            if not text and m.parts:
                kinds = ", ".join(sorted({str(p.get("type")) for p in m.parts if isinstance(p, dict)}))
                return f"[{kinds}]"
            return fmt.preview(text)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (
                MessageColumn.NUMBER, MessageColumn.ESTIMATE, MessageColumn.EXACT):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ForegroundRole and col == MessageColumn.TEXT and not m.text:
            return QBrush(MUTED)
        if role == Qt.ItemDataRole.ToolTipRole and col == MessageColumn.ESTIMATE and row.uncountable:
            return fmt.plain_tooltip(f"{UNCOUNTABLE_MARK} {row.uncountable}")   # as the thread list says it
        if role == Qt.ItemDataRole.ToolTipRole and col == MessageColumn.TIME:
            return fmt.plain_tooltip(m.created_at)
        if role == Qt.ItemDataRole.ToolTipRole and col == MessageColumn.SPEAKER:
            att = self.attribution(index.row())
            if att is not None and att.parse.turns:
                t = att.parse.turns[0]
                return fmt.plain_tooltip(f"{t.author_name or '(no author_name)'}\nauthor_id {t.author_id or '(none)'}"
                                         f"\nfunctional_role {t.functional_role or '(none)'}")
            return None
        if role == SORT_ROLE:
            return {MessageColumn.NUMBER: self.number(index.row()), MessageColumn.ROLE: m.role,
                    MessageColumn.TIME: m.created_at or "", MessageColumn.ESTIMATE: row.estimate or 0,
                    MessageColumn.EXACT: row.exact or 0, MessageColumn.TEXT: m.text,
                    MessageColumn.SPEAKER: self.speaker_text(index.row())}[col]
        if role == ID_ROLE:
            return m.id
        if role == RAW_ROLE:
            return m.text
        if role == RECORD_ROLE:
            return row
        return None
