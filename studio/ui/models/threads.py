"""The thread list: a lazy table (rows exposed a page at a time) with two threshold-bar columns.

Rows come from one background read (`studio.app.listing.load_listing`); they are handed to the view in
pages through `canFetchMore`/`fetchMore`, filtered by resource and title and sorted in memory.
Statuses arrive later, in batches, from background `studio.app.open_results.load_results_batch` tasks; until then
a bar shows "…". A batch touches only its own rows (no re-sort, `dataChanged` for the changed rows only).
"""

from __future__ import annotations

import operator
from enum import IntEnum

from PySide6.QtCore import QModelIndex, QModelRoleDataSpan, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QFont

from studio.app import text as fmt
from studio.app.listing import ListingCounts, ThreadRow
from studio.app.uncountable import UNCOUNTABLE_MARK
from studio.engine.status import ThreadStatus
from studio.store.cells import DAMAGED_TEXT_NOTE
from studio.store.records import iso_to_ms, ms_to_iso
from studio.ui.models.base import TableModel
from studio.ui.models.resources import ORPHANS
from studio.ui.models.roles import BAR_ROLE, ID_ROLE, RECORD_ROLE, SORT_ROLE
from studio.ui.style import MUTED, BarValue

PAGE_SIZE = 200


#: The title shown for an OM record whose thread was deleted (Mastra #16621).
ORPHAN_TITLE = "Record without a thread"
#: Shown after the Last activity of a thread whose updatedAt is older than its newest message.
STALE_MARK = "⚠"


def last_activity_tooltip(row: ThreadRow) -> str:
    """Return the Last activity cell's tooltip: the time, where it comes from, and a stale updatedAt explained."""
    t = row.thread
    when = fmt.local_time(ms_to_iso(row.activity_ms), seconds=True) if row.activity_ms else fmt.NONE
    lines = [f"Last activity {when}", f"updatedAt {t.updated_at}",
             f"newest message {t.newest_message_at or '(none)'}", f"createdAt {t.created_at}"]
    if row.updated_at_stale:
        lines.append(f"{STALE_MARK} updatedAt is older than the newest message: Mastra did not update it "
                     "(Mastra #17932); the newest message's time is shown.")
    return "\n".join(lines)


class ThreadColumn(IntEnum):
    """Columns of the thread list."""

    TITLE = 0
    RESOURCE = 1
    MESSAGES = 2
    LAST_ACTIVITY = 3
    OBSERVATION = 4
    REFLECTION = 5


HEADERS = {
    ThreadColumn.TITLE: "Title",
    ThreadColumn.RESOURCE: "Resource",
    ThreadColumn.MESSAGES: "Messages",
    ThreadColumn.LAST_ACTIVITY: "Last activity",
    ThreadColumn.OBSERVATION: "Messages before observation",
    ThreadColumn.REFLECTION: "Observations before reflection",
}
#: Bar column headings when the columns are narrow (the tooltip keeps the full name).
SHORT_HEADERS = {ThreadColumn.OBSERVATION: "Observe", ThreadColumn.REFLECTION: "Reflect"}
HEADER_TIPS = {
    ThreadColumn.OBSERVATION: "Unobserved message tokens / observation threshold (messageTokens)",
    ThreadColumn.REFLECTION: "Observation log tokens / reflection threshold (observationTokens)",
}
BAR_COLUMNS = (ThreadColumn.OBSERVATION, ThreadColumn.REFLECTION)
NO_OM = "no OM"
_COLUMNS = list(ThreadColumn)
_ACTIVITY = operator.attrgetter("activity_ms")   # the Last activity sort key (`_sort_key`), without a call per row
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_ITALIC = QFont()
_ITALIC.setItalic(True)


class ThreadTableModel(TableModel):
    """Threads of the open database (optionally filtered by resource, text and metadata), PAGE_SIZE rows at a time."""

    rows_replaced = Signal()   # set_rows ran (a new listing): id filters computed from the old one must be redone
    cleared = Signal()         # clear() ran (another database is being opened)

    def __init__(self, parent=None, *, page_size: int = PAGE_SIZE):
        super().__init__(parent)
        self._page_size = page_size
        self._all: list[ThreadRow] = []
        self._by_id: dict[str, ThreadRow] = {}
        self._rows: list[ThreadRow] = []     # filtered and sorted
        self._position: dict[str, int] = {}  # thread id -> index in _rows
        self._loaded = 0
        self._resource: str | None = None
        self._text = ""                      # casefolded title/id filter ("" = none)
        self._ids: frozenset[str] | None = None   # ids passing the metadata filter (None = no such filter)
        self._lineage_ids: frozenset[str] | None = None   # ids passing the clone filter (None = no such filter)
        self._sort_column = ThreadColumn.LAST_ACTIVITY
        self._sort_order = Qt.SortOrder.DescendingOrder
        self._status_state = "pending"   # "pending" | "done" | "failed"
        self._counts_state = "done"      # "pending": message counts and last activity being read ("…"); "failed" ("?")
        self._short_headers = False
        #: The longest text of the known bars, by over-threshold (painted bold) or not: sizes the bar columns.
        self.widest_bar_texts: dict[bool, str] = {False: "", True: ""}

    # -- feeding ---------------------------------------------------------------------------

    def set_rows(self, rows: list[ThreadRow], *, keep_statuses: bool = False, counted: bool = True) -> None:
        """Replace every row; KEEP_STATUSES carries known statuses over (a refresh) until recomputed.

        COUNTED False: the rows' message counts and newest messages are not read yet (the first step of
        `loaders.load_listing_in_two_steps`): Messages and Last activity show "…" until `apply_counts`,
        and the rows are ordered by their updatedAt meanwhile.
        """
        self._counts_state = "done" if counted else "pending"
        if keep_statuses:
            known = {r.thread.id: r.status for r in self._all if r.status is not None}
            marked = {r.thread.id: r.uncountable for r in self._all if r.uncountable}
            for r in rows:
                if r.status is None and r.has_om:
                    r.status = known.get(r.thread.id)
                    r.uncountable = marked.get(r.thread.id)
        for r in rows:
            if not r.activity_ms:
                r.activity_ms = iso_to_ms(r.thread.updated_at) or 0
        self._all = rows
        self._by_id = {r.thread.id: r for r in rows}
        if not keep_statuses:
            self.widest_bar_texts = {False: "", True: ""}
        self._status_state = "pending"
        new_rows = self._filtered_sorted()
        if self._rows and len(new_rows) == len(self._rows) and all(
                a.thread.id == b.thread.id for a, b in zip(new_rows, self._rows, strict=True)):
            self._set_visible(new_rows)
            self._emit_all_changed()
            self.rows_replaced.emit()
            return
        self.beginResetModel()
        self._set_visible(new_rows)
        self._loaded = min(len(self._rows), max(self._page_size, self._loaded if keep_statuses else 0))
        self.endResetModel()
        self.rows_replaced.emit()

    def update_rows(self, rows: list[ThreadRow]) -> None:
        """Put ROWS in place of the rows of the same threads (a live refresh re-read them; others are kept).

        A row whose status is not computed yet keeps the old one until `apply_statuses`. Only those rows
        repaint; when their new values move them in the sort order the rows are laid out again (the
        selection follows its thread). A thread not listed is ignored (a live refresh that adds or removes
        threads replaces every row with `set_rows`).
        """
        fresh = {}
        for row in rows:
            old = self._by_id.get(row.thread.id)
            if old is None:
                continue
            if row.status is None and row.has_om and row.lookup_key == old.lookup_key:
                row.status, row.uncountable = old.status, old.uncountable
            if not row.activity_ms:
                row.activity_ms = iso_to_ms(row.thread.updated_at) or 0
            fresh[row.thread.id] = row
            if row.status is not None:
                self._note_bar_texts(row)
        if not fresh:
            return
        if len(fresh) == 1 and self._replace_in_place(*fresh.values()):
            return
        self._all = [fresh.get(r.thread.id, r) for r in self._all]
        self._by_id.update(fresh)
        new_rows = self._filtered_sorted()
        if [r.thread.id for r in new_rows] != [r.thread.id for r in self._rows]:
            self._relayout(new_rows)
            return
        self._rows = new_rows   # the same threads in the same places: `_position` stands (rebuilding it cost 7 ms)
        self._emit_rows_changed([i for tid in fresh if 0 <= (i := self._position.get(tid, -1)) < self._loaded],
                                list(ThreadColumn))

    def _replace_in_place(self, row: ThreadRow) -> bool:
        """Put ROW where its thread's row is when that keeps the order `_filtered_sorted` would give (no filter, not
        sorted by a bar, its sort key strictly between its neighbours' or unchanged) and repaint it; False (nothing
        done) otherwise.

        What a live refresh of one thread usually is: no pass over the 5,000 rows to sort them again."""
        tid = row.thread.id
        old = self._by_id[tid]
        i = self._position.get(tid)
        col = self._sort_column
        if (self._resource is not None or self._ids is not None or self._lineage_ids is not None or self._text
                or col in BAR_COLUMNS   # statuses arrive without a sort: the rows may not be in their order
                or i is None or not 0 <= i < len(self._rows) or self._rows[i] is not old):
            return False
        key = self._sort_key(row, col)
        if key != self._sort_key(old, col):
            before = self._sort_key(self._rows[i - 1], col) if i > 0 else None
            after = self._sort_key(self._rows[i + 1], col) if i + 1 < len(self._rows) else None
            if self._sort_order == Qt.SortOrder.DescendingOrder:
                before, after = after, before
            # ascending from BEFORE to AFTER; a tie would be ordered by the rows' places in _all: sort again then
            try:
                if (before is not None and not before < key) or (after is not None and not key < after):
                    return False
            except TypeError:   # keys of different kinds (None against a number): sort again
                return False
        at = next((k for k, r in enumerate(self._all) if r is old), None)
        if at is None:
            return False
        self._all[at] = row
        self._rows[i] = row
        self._by_id[tid] = row
        self._emit_rows_changed([i] if i < self._loaded else [], list(ThreadColumn))
        return True

    def set_resource_filter(self, resource_id: str | None) -> None:
        """Show only RESOURCE_ID's threads (None: every thread)."""
        if resource_id == self._resource:
            return
        self._resource = resource_id
        self._refilter()

    def set_text_filter(self, text: str) -> None:
        """Show only threads whose title or id contains TEXT (case-insensitive; "" shows every thread)."""
        text = (text or "").strip().casefold()
        if text == self._text:
            return
        self._text = text
        self._refilter()

    def set_id_filter(self, ids) -> None:
        """Show only the threads whose id is in IDS (the metadata filter's matches; None: no such filter)."""
        ids = frozenset(ids) if ids is not None else None
        if ids == self._ids:
            return
        self._ids = ids
        self._refilter()

    def set_lineage_filter(self, ids) -> None:
        """Show only the threads whose id is in IDS (clones only / sources only; None: no such filter)."""
        ids = frozenset(ids) if ids is not None else None
        if ids == self._lineage_ids:
            return
        self._lineage_ids = ids
        self._refilter()

    @property
    def lineage_filter(self) -> frozenset[str] | None:
        """Return the ids the clone filter keeps (None: no clone filter)."""
        return self._lineage_ids

    @property
    def id_filter(self) -> frozenset[str] | None:
        """Return the ids the metadata filter keeps (None: no metadata filter)."""
        return self._ids

    def set_short_headers(self, short: bool) -> None:
        """Name the bar columns with one short word (narrow columns) or their full two-line names."""
        if short != self._short_headers:
            self._short_headers = short
            self.headerDataChanged.emit(Qt.Orientation.Horizontal, min(BAR_COLUMNS), max(BAR_COLUMNS))

    @property
    def text_filter(self) -> str:
        """Return the title filter (casefolded; "" for none)."""
        return self._text

    def apply_statuses(self, statuses: list[ThreadStatus], *, final: bool = False,
                       uncountable: dict[str, str] | None = None) -> None:
        """Fill in STATUSES; FINAL marks the end of the computation (rows still unknown show an em dash).

        UNCOUNTABLE {thread id: sentence} marks threads Mastra cannot count a pending message of: their
        title and bars show ⚠ and the tooltip says why (`StatusBatch.uncountable`).

        Only the rows of STATUSES change (`dataChanged` per run of adjacent loaded rows); the rows are
        re-sorted once, at the end, and only when the list is sorted by a bar column.
        """
        changed: list[int] = []
        for thread_id, sentence in (uncountable or {}).items():
            row = self._by_id.get(thread_id)
            if row is not None:
                row.status, row.uncountable = None, sentence
                if 0 <= (i := self._position.get(thread_id, -1)) < self._loaded:
                    changed.append(i)
        for st in statuses:
            row = self._by_id.get(st.thread_id)
            if row is None:
                continue
            row.status, row.uncountable = st, None
            self._note_bar_texts(row)
            i = self._position.get(st.thread_id, -1)
            if 0 <= i < self._loaded:
                changed.append(i)
        if final:
            self._status_state = "done"
            if self._sort_column in BAR_COLUMNS:
                self.sort(self._sort_column, self._sort_order)
            self._emit_all_changed(BAR_COLUMNS)   # the rows still unknown turn from "…" into "—"
            return
        self._emit_rows_changed(changed, _COLUMNS if uncountable else BAR_COLUMNS)

    def apply_counts(self, counts: ListingCounts) -> None:
        """Fill in the message counts and last activity of rows set with `counted=False` (the listing's second step).

        Rows stay where they are unless the list is sorted by Messages or Last activity and the counts
        change the order; then the rows are sorted again in one layout change that keeps the selection
        (persistent indexes follow their thread; no model reset). Under the default order (Last
        activity, newest first) the first step orders by updatedAt, a lower bound of the last activity
        that real Mastra writes a millisecond or two before the thread's last message: a row moves only
        when its newest message is later than the updatedAt of rows listed above it, i.e. a thread whose
        updatedAt Mastra left stale (#17932, marked ⚠) or threads saved within the same milliseconds.
        """
        counts.apply(self._all)
        self._counts_state = "done"
        if self._sort_column in (ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY):
            rows = self._filtered_sorted()
            if [r.thread.id for r in rows] != [r.thread.id for r in self._rows]:
                self._relayout(rows)
        self._emit_all_changed((ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY))

    def mark_counts_failed(self) -> None:
        """Show "?" in Messages and Last activity: the listing's second step failed."""
        self._counts_state = "failed"
        self._emit_all_changed((ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY))

    @property
    def counted(self) -> bool:
        """Return False while the rows' message counts and last activity are being read (or could not be)."""
        return self._counts_state == "done"

    def mark_statuses_failed(self) -> None:
        """Show "?" in bars whose status could not be computed."""
        self._status_state = "failed"
        self._emit_all_changed(BAR_COLUMNS)

    @property
    def statuses_done(self) -> bool:
        """Return True once every status is computed (or known to be missing)."""
        return self._status_state == "done"

    def clear(self) -> None:
        """Remove every row (another database: the metadata and clone filters are dropped too)."""
        self.beginResetModel()
        self._all, self._by_id, self._loaded = [], {}, 0
        self._ids = self._lineage_ids = None
        self._set_visible([])
        self.endResetModel()
        self.cleared.emit()

    # -- lookups ---------------------------------------------------------------------------

    @property
    def total_rows(self) -> int:
        """Return how many rows the filter keeps (loaded or not)."""
        return len(self._rows)

    @property
    def resource_filter(self) -> str | None:
        """Return the resource the list is filtered to (None: all)."""
        return self._resource

    def all_threads(self) -> list[ThreadRow]:
        """Return every row, unfiltered."""
        return list(self._all)

    def visible_rows(self) -> list[ThreadRow]:
        """Return the filtered, sorted rows (loaded or not)."""
        return list(self._rows)

    def row_of(self, thread_id: str, *, fetch: bool = True) -> int:
        """Return the row of THREAD_ID, fetching pages up to it when FETCH; -1 if absent."""
        i = self._position.get(thread_id, -1)
        if i >= self._loaded:
            if not fetch:
                return -1
            while self._loaded <= i:
                self.fetchMore(QModelIndex())
        return i

    def rows_of_threads(self, thread_ids) -> list[ThreadRow]:
        """Return the rows of THREAD_IDS that are among all rows (filtered or not), by thread id; work that grows
        with THREAD_IDS, not with the listing (a live refresh's few threads)."""
        return [row for tid in sorted(thread_ids) if (row := self._by_id.get(tid)) is not None]

    def has_thread(self, thread_id: str) -> bool:
        """Return True when THREAD_ID is among all rows (whether the filters show it or not)."""
        return thread_id in self._by_id

    def fetch_all(self) -> None:
        """Expose every row the filter keeps (End key: the last row is the last thread, not the last page's)."""
        while self.canFetchMore(QModelIndex()):
            self.fetchMore(QModelIndex())

    def thread_row(self, row: int) -> ThreadRow | None:
        """Return the ThreadRow at ROW (a loaded row), or None."""
        return self._rows[row] if 0 <= row < self._loaded else None

    # -- lazy loading ----------------------------------------------------------------------

    def canFetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> bool:
        return not parent.isValid() and self._loaded < len(self._rows)

    def fetchMore(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> None:
        if parent.isValid():
            return
        n = min(self._page_size, len(self._rows) - self._loaded)
        if n <= 0:
            return
        start = self._loaded
        self.beginInsertRows(QModelIndex(), start, start + n - 1)  # the last index is inclusive
        self._loaded += n
        self.endInsertRows()

    # -- Qt model API ----------------------------------------------------------------------

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else self._loaded

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(ThreadColumn)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal or not (0 <= section < len(ThreadColumn)):
            return None
        col = ThreadColumn(section)
        if role == Qt.ItemDataRole.DisplayRole:
            if col in BAR_COLUMNS:
                # The bar columns' names are long: two lines, or one short word when the columns are narrow.
                return SHORT_HEADERS[col] if self._short_headers else HEADERS[col].replace(" before ", " before\n")
            return HEADERS[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            tip = HEADER_TIPS.get(col)
            return f"{HEADERS[col]}: {tip}" if tip else HEADERS[col]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < self._loaded):
            return None
        return self._value(self._rows[index.row()], _COLUMNS[index.column()], role)

    def multiData(self, index: QModelIndex | QPersistentModelIndex, roleDataSpan: QModelRoleDataSpan) -> None:
        if not index.isValid() or not (0 <= index.row() < self._loaded):
            return
        row, col = self._rows[index.row()], _COLUMNS[index.column()]
        for i in range(len(roleDataSpan)):
            item = roleDataSpan[i]
            item.setData(self._value(row, col, item.role()))

    def _value(self, row: ThreadRow, col: ThreadColumn, role: int):
        t = row.thread
        if role == Qt.ItemDataRole.DisplayRole:
            if col == ThreadColumn.TITLE:
                title = f"{ORPHAN_TITLE} ({t.id})" if row.orphan else t.title if t.title else t.id
                return f"{UNCOUNTABLE_MARK} {title}" if row.uncountable else title
            if col == ThreadColumn.RESOURCE:
                return t.resource_id
            if col == ThreadColumn.MESSAGES:
                return fmt.tokens(t.message_count) if self._counts_state == "done" else self._counts_placeholder()
            if col == ThreadColumn.LAST_ACTIVITY:
                if self._counts_state != "done":
                    return self._counts_placeholder()
                shown = fmt.short_time(ms_to_iso(row.activity_ms)) if row.activity_ms else fmt.short_time(t.updated_at)
                return f"{shown} {STALE_MARK}" if row.updated_at_stale else shown
            return self._bar(row, col).text
        if role == BAR_ROLE:
            return self._bar(row, col) if col in BAR_COLUMNS else None
        if role == SORT_ROLE:
            return self._sort_key(row, col)
        if role == ID_ROLE:
            return t.id
        if role == RECORD_ROLE:
            return row
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(row, col)
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return _RIGHT if col == ThreadColumn.MESSAGES else None
        if col == ThreadColumn.TITLE and (not t.title or row.orphan):
            if role == Qt.ItemDataRole.ForegroundRole:
                return QBrush(MUTED)
            if role == Qt.ItemDataRole.FontRole:
                return _ITALIC
        return None

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Sort every row (loaded or not) by COLUMN; persistent indexes (the selection) follow their thread."""
        if not (0 <= column < len(ThreadColumn)):
            return
        self._sort_column, self._sort_order = ThreadColumn(column), order
        self._relayout(self._filtered_sorted())

    # -- helpers ---------------------------------------------------------------------------

    def _relayout(self, rows: list[ThreadRow]) -> None:
        """Show ROWS (the same rows, in another order) in one layout change; persistent indexes follow their thread."""
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        ids = [self._rows[p.row()].thread.id if 0 <= p.row() < len(self._rows) else None for p in persistent]
        self._set_visible(rows)
        moved = []
        for p, tid in zip(persistent, ids, strict=True):
            i = self._position.get(tid, -1)
            moved.append(self.index(i, p.column()) if 0 <= i < self._loaded else QModelIndex())
        self.changePersistentIndexList(persistent, moved)
        self.layoutChanged.emit()

    def _refilter(self) -> None:
        self.beginResetModel()
        self._set_visible(self._filtered_sorted())
        self._loaded = min(len(self._rows), self._page_size)
        self.endResetModel()

    def _set_visible(self, rows: list[ThreadRow]) -> None:
        self._rows = rows
        self._position = {r.thread.id: i for i, r in enumerate(rows)}

    def _matches(self, row: ThreadRow) -> bool:
        t = row.thread
        if self._resource == ORPHANS:
            if not row.orphan:
                return False
        elif self._resource is not None and t.resource_id != self._resource:
            return False
        if self._ids is not None and t.id not in self._ids:
            return False
        if self._lineage_ids is not None and t.id not in self._lineage_ids:
            return False
        return not self._text or self._text in (t.title or "").casefold() or self._text in t.id.casefold()

    def _filtered_sorted(self) -> list[ThreadRow]:
        """Return the rows the filters keep, sorted (cheap enough for the GUI thread with 5,000 threads: the
        unfiltered list is copied, not tested row by row, and Last activity sorts on the attribute itself)."""
        if self._resource is None and self._ids is None and self._lineage_ids is None and not self._text:
            rows = list(self._all)
        else:
            rows = [r for r in self._all if self._matches(r)]
        col = self._sort_column
        reverse = self._sort_order == Qt.SortOrder.DescendingOrder
        if col == ThreadColumn.LAST_ACTIVITY:
            rows.sort(key=_ACTIVITY, reverse=reverse)
        else:
            rows.sort(key=lambda r: self._sort_key(r, col), reverse=reverse)
        return rows

    def _sort_key(self, row: ThreadRow, col: ThreadColumn):
        t = row.thread
        if col == ThreadColumn.TITLE:
            return (t.title or t.id).casefold()
        if col == ThreadColumn.RESOURCE:
            return (t.resource_id or "").casefold()
        if col == ThreadColumn.MESSAGES:
            return t.message_count or 0
        if col == ThreadColumn.LAST_ACTIVITY:
            return row.activity_ms
        st = row.status
        if st is None:
            return -1.0
        return st.message_ratio if col == ThreadColumn.OBSERVATION else st.observation_ratio

    def _counts_placeholder(self) -> str:
        return fmt.ELLIPSIS if self._counts_state == "pending" else "?"

    def _bar(self, row: ThreadRow, col: ThreadColumn) -> BarValue:
        st = row.status
        if st is None:
            if not row.has_om:
                return BarValue(placeholder=NO_OM)
            if row.uncountable and col == ThreadColumn.OBSERVATION:
                return BarValue(placeholder=UNCOUNTABLE_MARK)
            return BarValue(placeholder={"pending": fmt.ELLIPSIS, "done": fmt.NONE}.get(self._status_state, "?"))
        if col == ThreadColumn.OBSERVATION:
            return BarValue(st.pending_tokens, st.threshold)
        return BarValue(st.observation_token_count, st.reflection_threshold)

    def _note_bar_texts(self, row: ThreadRow) -> None:
        """Keep ROW's bar texts in `widest_bar_texts` when longer than those seen (O(1) a status)."""
        for col in BAR_COLUMNS:
            bar = self._bar(row, col)
            if bar.known:
                over = bar.state == "over"
                if len(bar.text) > len(self.widest_bar_texts[over]):
                    self.widest_bar_texts[over] = bar.text

    def _tooltip(self, row: ThreadRow, col: ThreadColumn) -> str:
        t = row.thread
        if row.uncountable and col in (ThreadColumn.TITLE, *BAR_COLUMNS):
            return fmt.plain_tooltip(f"{UNCOUNTABLE_MARK} {row.uncountable}")
        if col in BAR_COLUMNS:
            bar = self._bar(row, col)
            if not row.has_om:
                return "No Observational Memory record governs this thread"
            if not bar.known:
                return "Computing…" if self._status_state == "pending" else "The status could not be computed"
            what = "unobserved message tokens" if col == ThreadColumn.OBSERVATION else "observation tokens"
            return f"{bar.text} ({what}; {'over' if bar.state == 'over' else 'under'} the threshold)"
        if col in (ThreadColumn.MESSAGES, ThreadColumn.LAST_ACTIVITY) and self._counts_state != "done":
            return "Reading the message counts…" if self._counts_state == "pending" else \
                "The message counts could not be read"
        if col == ThreadColumn.LAST_ACTIVITY:
            return fmt.plain_tooltip(last_activity_tooltip(row))
        if row.orphan:
            return fmt.plain_tooltip(f"{ORPHAN_TITLE}: thread {t.id} was deleted, its Observational Memory record "
                                     f"remains (Mastra #16621)\nresource {t.resource_id}")
        damaged = f"\nstored {', '.join(t.damaged_text)} {DAMAGED_TEXT_NOTE}" if t.damaged_text else ""
        return fmt.plain_tooltip(f"{t.title or '(no title)'}\nthread {t.id}\nresource {t.resource_id}{damaged}")

    def _emit_all_changed(self, columns=None) -> None:
        if not self._loaded:
            return
        cols = list(columns) if columns else list(ThreadColumn)
        self.dataChanged.emit(self.index(0, min(cols)), self.index(self._loaded - 1, max(cols)))

    def _emit_rows_changed(self, rows: list[int], columns) -> None:
        """Emit dataChanged for ROWS (loaded rows), one signal per run of adjacent rows."""
        if not rows:
            return
        first_col, last_col = min(columns), max(columns)
        rows = sorted(set(rows))
        start = prev = rows[0]
        for r in [*rows[1:], None]:
            if r is not None and r == prev + 1:
                prev = r
                continue
            self.dataChanged.emit(self.index(start, first_col), self.index(prev, last_col))
            if r is not None:
                start = prev = r
