"""Thread ▸ Observational memory: the two threshold bars, the record, thresholds, flags, chunks and the log."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics
from PySide6.QtWidgets import (
    QAbstractItemView,
    QBoxLayout,
    QFormLayout,
    QFrame,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.thread_detail import ThreadDetail
from studio.common.om_settings import ThresholdRange, max_threshold
from studio.engine.status import FlagState, ThreadStatus
from studio.store.records import OMRecord, Thread
from studio.ui.models.chunks import BufferedChunkModel, ChunkColumn
from studio.ui.models.observations import LogColumn, ObservationLogModel
from studio.ui.models.roles import RECORD_ROLE
from studio.ui.widgets.common import empty_state, plain_label, set_role, table_view
from studio.ui.widgets.threshold_bar import ThresholdBar
from studio.ui.widgets.trace_panel import TraceSearchBox

#: Page width (px) from which the summary and the actions (trace box, Observe / Reflect buttons) share a row.
WIDE_SUMMARY_MIN_WIDTH = 820
#: Below these widths (px) the bars, and the detail boxes, are stacked in one column.
WIDE_BARS_MIN_WIDTH = 500
WIDE_BOXES_MIN_WIDTH = 860
#: Below this log width (px) the Priority and Line columns hide (the priority dot stays).
WIDE_LOG_MIN_WIDTH = 420
#: Height (px) the section tabs (log, record, chunks) keep before the page scrolls.
CONTENT_MIN_LOG_HEIGHT = 220
MESSAGES_BAR_TITLE = "Messages before observation"
OBSERVATIONS_BAR_TITLE = "Observations before reflection"
NO_OM_TEXT = ("No Observational Memory record governs this thread yet.\n\n"
              "Mastra creates one the first time an agent with observational memory observes this "
              "thread (thread scope) or its resource (resource scope). Until then there are no "
              "thresholds, no observation log and no generations; the messages are in the Messages tab.")
FLAG_NAMES = {
    "isObserving": "Observing",
    "isReflecting": "Reflecting",
    "isBufferingObservation": "Buffering observation",
    "isBufferingReflection": "Buffering reflection",
}
NO_CHUNK_TEXT = "Select a chunk to read its observations."
STALE_WARNING_STYLE = ("QLabel { background: #fef3c7; color: #78350f; border: 1px solid #f59e0b; "
                       "border-radius: 4px; padding: 4px 6px; font-weight: 600; }")
STALE_TIP = ("The flag is set but the record has not changed for a long time: most likely left behind "
             "by a process that died. Mastra clears such a flag before its own manual reflection.")


class _FillingPage(QWidget):
    """The scrolled OM page: it fills the visible height (the log takes the rest) and scrolls only below its minimum.

    Its wrapped labels still get their height from the layout; what is hidden from the scroll area is
    the preferred height-for-width, which would make the page taller than the view at every size.
    """

    def heightForWidth(self, _width: int) -> int:
        return -1


def stale_warning_text(flags: list[FlagState]) -> str:
    """Return the warning shown for stale busy FLAGS ("⚠ Stale busy flag: isReflecting, set 3 h ago …"), or ""."""
    if not flags:
        return ""
    names = ", ".join(f"{f.name} (set {fmt.age(f.age_ms)} ago)" if f.age_ms is not None else f"{f.name} (age unknown)"
                      for f in flags)
    head = "Stale busy flag" if len(flags) == 1 else "Stale busy flags"
    return (f"⚠ {head}: {names}. The record has not changed since: most likely left by a process that "
            "stopped. Mastra clears such a flag before its own manual reflection.")


def _form(box: QGroupBox) -> QFormLayout:
    form = QFormLayout(box)
    form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    form.setHorizontalSpacing(12)
    form.setVerticalSpacing(4)
    return form


def _regrid(grid: QGridLayout, widgets: list[QWidget], columns: int) -> None:
    """Place WIDGETS in GRID row by row, COLUMNS per row, with equal column stretch."""
    while grid.count():
        grid.takeAt(0)
    for c in range(2):
        grid.setColumnStretch(c, 0)
    for i, w in enumerate(widgets):
        grid.addWidget(w, i // columns, i % columns, Qt.AlignmentFlag.AlignTop)
    for c in range(columns):
        grid.setColumnStretch(c, 1)


def _threshold_text(value, in_force: int | None = None) -> str:
    if isinstance(value, ThresholdRange):
        text = f"{value.min:,}–{value.max:,} (shared budget)"
        return f"{text}; {in_force:,} in force" if in_force is not None else text
    return fmt.tokens(value)


class ObservationalMemoryTab(QWidget):
    """Show the OM status of one thread (or a clear empty state when no record governs it)."""

    reflect_requested = Signal()   # the user pressed *Reflect now…*
    observe_requested = Signal()   # the user pressed *Observe now…*
    activate_requested = Signal()  # the user pressed *Activate buffered chunks…*

    def __init__(self, parent=None):
        super().__init__(parent)
        self._stack = QStackedWidget()
        self._empty = empty_state(NO_OM_TEXT)
        self._stack.addWidget(self._empty)
        # In a short window the page scrolls instead of forcing the window taller.
        content = QScrollArea()
        content.setWidgetResizable(True)
        content.setFrameShape(QFrame.Shape.NoFrame)
        content.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        content.setWidget(self._build_content())
        self._stack.addWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self._stack)

    # -- building --------------------------------------------------------------------------

    def _build_content(self) -> QWidget:
        page = _FillingPage()
        col = QVBoxLayout(page)
        col.setContentsMargins(10, 10, 10, 10)
        col.setSpacing(8)

        self.messages_bar = ThresholdBar(
            MESSAGES_BAR_TITLE, over_text="Over the threshold: Mastra observes these messages on the next turn.",
            under_text="Mastra observes when the unobserved messages (in its token estimate) reach the threshold.")
        self.observations_bar = ThresholdBar(
            OBSERVATIONS_BAR_TITLE, over_text="Over the threshold: Mastra reflects (condenses the log) next.",
            under_text="Mastra reflects when the observation log (observationTokenCount) reaches the threshold.")
        # A box layout, not a grid: it gives a bar the height its wrapped state line needs.
        self._bars_box = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self._bars_box.addWidget(self.messages_bar, 1, Qt.AlignmentFlag.AlignTop)
        self._bars_box.addWidget(self.observations_bar, 1, Qt.AlignmentFlag.AlignTop)
        col.addLayout(self._bars_box)
        self._status_error = plain_label("", "loss", wrap=True)
        self._status_error.hide()
        col.addWidget(self._status_error)
        self.summary = plain_label("", "muted", wrap=True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.reflect_button = QPushButton("Reflect now…")
        self.reflect_button.setToolTip("Condense the observation log now: preview the new generation, then commit "
                                       "or discard it (Ctrl+R)")
        self.reflect_button.clicked.connect(self.reflect_requested)
        self.observe_button = QPushButton("Observe now…")
        self.observe_button.setToolTip("Run the Observer on the unobserved messages now: preview the new observation "
                                       "lines, then commit or discard them (Ctrl+E)")
        self.observe_button.clicked.connect(self.observe_requested)
        self.activate_button = QPushButton("Activate chunks…")
        self.activate_button.setToolTip("Move the buffered observation chunks into the active log now, as Mastra "
                                        "does at the threshold (Ctrl+Shift+B)")
        self.activate_button.clicked.connect(self.activate_requested)
        self.activate_button.hide()
        self.trace_box = TraceSearchBox()  # ThreadView sends its text to the Trace tab
        actions = QHBoxLayout()
        actions.addWidget(self.trace_box, 1, Qt.AlignmentFlag.AlignTop)
        actions.addWidget(self.activate_button, 0, Qt.AlignmentFlag.AlignTop)
        actions.addWidget(self.observe_button, 0, Qt.AlignmentFlag.AlignTop)
        actions.addWidget(self.reflect_button, 0, Qt.AlignmentFlag.AlignTop)
        # the summary beside the actions, or above them when the page is narrow (see eventFilter)
        self._summary_box = QBoxLayout(QBoxLayout.Direction.LeftToRight)
        self._summary_box.addWidget(self.summary, 1)
        self._summary_box.addLayout(actions)
        col.addLayout(self._summary_box)
        # A stale busy flag blocks Mastra's own work on this record: a warning, not a word in the grey summary.
        self.stale_warning = plain_label("", wrap=True)
        self.stale_warning.setStyleSheet(STALE_WARNING_STYLE)
        self.stale_warning.hide()
        col.addWidget(self.stale_warning)

        self.sections = QTabWidget()
        self.sections.setDocumentMode(True)
        self.sections.addTab(self._build_log_page(), "Observation log")
        self.sections.addTab(self._build_details_page(), "Record && thresholds")
        self.sections.addTab(self._build_chunks_page(), "Buffered chunks")
        self.sections.setMinimumHeight(CONTENT_MIN_LOG_HEIGHT)
        col.addWidget(self.sections, 1)

        self._bar_columns: int | None = None
        self._box_columns: int | None = None
        page.installEventFilter(self)
        self._page = page
        self._arrange_bars(2)
        self._arrange_boxes(2)
        return page

    def _build_log_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 6, 0, 0)
        self._log_summary = plain_label("", "muted", wrap=True)
        layout.addWidget(self._log_summary)
        self.log_model = ObservationLogModel(self)
        self.log_view = QTreeView()
        self.log_view.setModel(self.log_model)
        self.log_view.setUniformRowHeights(True)
        self.log_view.setAlternatingRowColors(True)
        self.log_view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.log_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.log_view.setTextElideMode(Qt.TextElideMode.ElideRight)
        header = self.log_view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(LogColumn.OBSERVATION, QHeaderView.ResizeMode.Stretch)
        # Fixed widths from the font: sizing to contents would measure every line of a long log.
        bold = QFont(self.font())
        bold.setBold(True)
        fm, bold_fm = self.fontMetrics(), QFontMetrics(bold)
        priority = max(bold_fm.horizontalAdvance("completed"), fm.horizontalAdvance("Priority"))
        widths = {LogColumn.PRIORITY: priority + 20,
                  LogColumn.TIME: fm.horizontalAdvance("00:00") + 24,
                  LogColumn.LINE: fm.horizontalAdvance("00000") + 16}
        for c, width in widths.items():
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(c, width)
        self.log_view.viewport().installEventFilter(self)
        self.log_view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.log_view.customContextMenuRequested.connect(self._on_log_view_context_menu_requested)
        layout.addWidget(self.log_view, 1)
        self._log_empty = empty_state("The observation log of this generation is empty.")
        self._log_empty.hide()
        layout.addWidget(self._log_empty, 1)
        return page

    def _on_log_view_context_menu_requested(self, pos) -> None:
        """Offer *Trace this observation* on an observation line (the Trace tab follows it)."""
        index = self.log_view.indexAt(pos)
        line = getattr(index.internalPointer(), "line", None) if index.isValid() else None
        if line is None or line.kind != "observation" or not line.text.strip():
            return
        from PySide6.QtWidgets import QMenu

        menu = QMenu(self)
        menu.addAction("Trace this observation", lambda: self.trace_box.trace_requested.emit(line.text.strip()))
        menu.exec(self.log_view.viewport().mapToGlobal(pos))

    def _build_details_page(self) -> QWidget:
        details = QWidget()
        col = QVBoxLayout(details)
        col.setContentsMargins(0, 6, 4, 0)
        grid = QGridLayout()
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(10)
        record_box = QGroupBox("Record")
        form = _form(record_box)
        self._lookup_key = self._add_row(form, "Lookup key")
        self._scope = self._add_row(form, "Scope")
        self._generation = self._add_row(form, "Generation")
        self._record_id = self._add_row(form, "Record id")
        self._last_observed = self._add_row(form, "Last observed")
        self._window = self._add_row(form, "Message window")

        thresholds_box = QGroupBox("Thresholds")
        form = _form(thresholds_box)
        self._source = self._add_row(form, "Source")
        self._message_tokens = self._add_row(form, "messageTokens")
        self._observation_tokens = self._add_row(form, "observationTokens")
        self._buffering = self._add_row(form, "Async buffering")
        self._observer_model = self._add_row(form, "Observer model")
        self._reflector_model = self._add_row(form, "Reflector model")

        flags_box = QGroupBox("Busy flags")
        self._flags_form = _form(flags_box)
        self._flag_labels: dict[str, QLabel] = {}
        for name, title in FLAG_NAMES.items():
            badge = plain_label("off", "badge", selectable=False)
            holder = QHBoxLayout()
            holder.addWidget(badge)
            holder.addStretch(1)
            self._flags_form.addRow(plain_label(title, "muted", selectable=False), holder)
            self._flag_labels[name] = badge

        state_box = QGroupBox("Thread state (metadata.mastra.om)")
        form = _form(state_box)
        self._current_task = self._add_row(form, "Current task")
        self._suggested = self._add_row(form, "Suggested response")

        self._grid = grid
        self._boxes = [record_box, thresholds_box, flags_box, state_box]
        col.addLayout(grid)
        col.addStretch(1)

        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(details)
        scroll.viewport().installEventFilter(self)
        self._scroll = scroll
        return scroll

    def _build_chunks_page(self) -> QWidget:
        page = QWidget()
        layout = QVBoxLayout(page)
        layout.setContentsMargins(0, 6, 0, 0)
        self._chunks_summary = plain_label("", "muted", wrap=True)
        layout.addWidget(self._chunks_summary)
        self.chunk_model = BufferedChunkModel(self)
        self.chunks_view = table_view()
        self.chunks_view.setModel(self.chunk_model)
        header = self.chunks_view.horizontalHeader()
        for c in (ChunkColumn.NUMBER, ChunkColumn.CREATED, ChunkColumn.TOKENS, ChunkColumn.MESSAGE_TOKENS,
                  ChunkColumn.MESSAGES):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.ResizeToContents)
        self.chunks_view.selectionModel().currentRowChanged.connect(self._on_chunks_current_changed)
        # The selected chunk's observations, in full and as plain text, below the table.
        self.chunk_text = QPlainTextEdit()
        self.chunk_text.setReadOnly(True)
        self.chunk_text.setPlaceholderText(NO_CHUNK_TEXT)
        self.chunk_heading = plain_label("", "muted", selectable=False)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 4, 0, 0)
        dl.setSpacing(2)
        dl.addWidget(self.chunk_heading)
        dl.addWidget(self.chunk_text, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.chunks_view)
        split.addWidget(detail)
        split.setStretchFactor(0, 1)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        return page

    def _on_chunks_current_changed(self, current, _previous) -> None:
        row = current.row() if current.isValid() else -1
        chunk = self.chunk_model.index(row, 0).data(RECORD_ROLE) if row >= 0 else None
        if not isinstance(chunk, dict):
            self.chunk_heading.setText("")
            self.chunk_text.setPlainText("")
            return
        observations = chunk.get("observations") if isinstance(chunk.get("observations"), str) else ""
        self.chunk_heading.setText(f"Chunk {row + 1} · observations")
        self.chunk_text.setPlainText(observations or "(this chunk stores no observations)")

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Resize:
            width = event.size().width()
            if watched is self._page:
                self._arrange_bars(2 if width >= WIDE_BARS_MIN_WIDTH else 1)
                self._summary_box.setDirection(QBoxLayout.Direction.LeftToRight if width >= WIDE_SUMMARY_MIN_WIDTH
                                               else QBoxLayout.Direction.TopToBottom)
            elif watched is self._scroll.viewport():
                self._arrange_boxes(2 if width >= WIDE_BOXES_MIN_WIDTH else 1)
            elif watched is self.log_view.viewport():
                narrow = width < WIDE_LOG_MIN_WIDTH
                for c in (LogColumn.PRIORITY, LogColumn.LINE):
                    self.log_view.header().setSectionHidden(c, narrow)
        return super().eventFilter(watched, event)

    def _arrange_bars(self, columns: int) -> None:
        """Put the two bars side by side (COLUMNS 2) or one above the other (1)."""
        if columns != self._bar_columns:
            self._bar_columns = columns
            wide = columns == 2
            self._bars_box.setDirection(QBoxLayout.Direction.LeftToRight if wide else QBoxLayout.Direction.TopToBottom)
            self._bars_box.setSpacing(24 if wide else 10)

    def _arrange_boxes(self, columns: int) -> None:
        """Lay the detail boxes out in COLUMNS columns."""
        if columns != self._box_columns:
            self._box_columns = columns
            _regrid(self._grid, self._boxes, columns)

    @staticmethod
    def _add_row(form: QFormLayout, title: str) -> QLabel:
        value = plain_label("", wrap=True)
        form.addRow(plain_label(title, "muted", selectable=False), value)
        return value

    # -- showing ---------------------------------------------------------------------------

    @property
    def has_record(self) -> bool:
        """Return True when a record is shown (False: the empty state)."""
        return self._stack.currentIndex() == 1

    def flag_texts(self) -> dict[str, str]:
        """Return {flag column: badge text} ("off", "on · live (2 min)", "on · stale (3 h old)")."""
        return {name: label.text() for name, label in self._flag_labels.items()}

    def empty_text(self) -> str:
        """Return the empty-state text."""
        return self._empty.text()

    def clear(self) -> None:
        """Show nothing (no thread)."""
        self.messages_bar.clear()
        self.observations_bar.clear()
        self.chunk_model.set_chunks([])
        self._on_chunks_current_changed(self.chunk_model.index(-1, 0), None)
        self.log_model.set_log(None)
        self._stack.setCurrentIndex(0)

    def show_detail(self, detail: ThreadDetail, previous: ThreadDetail | None = None) -> None:
        """Show DETAIL's OM status, record, thresholds, flags, thread state, chunks and active log.

        PREVIOUS: the detail shown before, of the same thread (a live refresh); when its record equals
        DETAIL's (every column), the chunk list and the log stay as drawn (their selection and scroll
        too) and only what the status and the thread decide is shown again.
        """
        record = detail.record
        if record is None:
            self.clear()
            return
        same = previous is not None and previous.record is not None and previous.record == record
        self._stack.setCurrentIndex(1)
        self._show_bars(detail.status, detail.status_error or self._json_problem(record))
        self._show_record(record, detail.status)
        self._show_thresholds(record, detail.status)
        self._show_flags(detail.status)
        self._show_thread_state(detail.thread)
        if same:
            self._chunks_summary.setText(self._chunks_text(record, detail.status))
        else:
            self._show_chunks(record, detail.status)
        self._show_summary(record, detail.status)
        if not same:
            self._show_log(detail)

    @staticmethod
    def _json_problem(record: OMRecord) -> str | None:
        """Return a sentence about stored JSON columns that could not be parsed, or None."""
        if not record.json_errors:
            return None
        names = ", ".join(sorted(record.json_errors))
        note = " Mastra's default thresholds are shown." if "config" in record.json_errors else ""
        return f"this generation's {names} could not be read (malformed JSON).{note}"

    def _show_summary(self, record: OMRecord, status: ThreadStatus | None) -> None:
        bits = [f"Generation {record.generation_count} ({record.origin_type})", f"{record.scope} scope"]
        n = len(record.buffered_chunks)
        bits.append(f"{n} buffered chunk{'s' if n != 1 else ''}")
        busy = [f"{FLAG_NAMES.get(f.name, f.name).lower()} ({'stale' if f.stale else 'live'})"
                for f in (status.flags if status else []) if f.set]
        bits.append(f"busy: {', '.join(busy)}" if busy else "no busy flags")
        self.summary.setText(" · ".join(bits))
        stale = [f for f in (status.flags if status else []) if f.set and f.stale]
        self.stale_warning.setText(stale_warning_text(stale))
        self.stale_warning.setVisible(bool(stale))
        self.sections.setTabText(2, f"Buffered chunks ({n})")

    def _show_bars(self, status: ThreadStatus | None, error: str | None) -> None:
        self._status_error.setVisible(bool(error))
        if error and status is not None:  # figures shown, with a caveat
            self._status_error.setText(f"Note: {error}")
        else:
            self._status_error.setText(f"The status could not be computed: {error}" if error else "")
        if status is None:
            self.messages_bar.clear("Unknown")
            self.observations_bar.clear("Unknown")
            return
        n = status.unobserved_message_count
        notes = [f"{n:,} unobserved"]
        if status.other_threads_tokens:
            notes.append(f"{status.other_threads_tokens:,} from other threads")
        if status.buffered_chunk_count:
            notes.append(f"{status.buffered_chunk_tokens:,} buffered (hatched)")
        self.messages_bar.set_value(status.pending_tokens, status.threshold,
                                    buffered=status.buffered_chunk_tokens, note=" · ".join(notes))
        self.observations_bar.set_value(status.observation_token_count, status.reflection_threshold,
                                        note=f"generation {status.generation_count}")

    def _show_record(self, record: OMRecord, status: ThreadStatus | None) -> None:
        self._lookup_key.setText(record.lookup_key)
        scope = record.scope
        if scope == "resource":
            scope = f"resource ({record.resource_id}): shared by the resource's threads"
        self._scope.setText(scope)
        self._generation.setText(f"{record.generation_count} · {record.origin_type}")
        self._record_id.setText(record.id)
        self._last_observed.setText(fmt.local_time(record.last_observed_at, seconds=True))
        self._last_observed.setToolTip(fmt.plain_tooltip(record.last_observed_at or ""))
        observed = len(record.observed_message_ids)
        unobserved = status.unobserved_message_count if status else None
        self._window.setText(f"{fmt.tokens(unobserved)} unobserved · {observed:,} observed ids")

    def _show_thresholds(self, record: OMRecord, status: ThreadStatus | None) -> None:
        if status is None:
            for label in (self._source, self._message_tokens, self._observation_tokens, self._buffering,
                          self._observer_model, self._reflector_model):
                label.setText(fmt.NONE)
            return
        s = status.settings
        self._source.setText(f"record config (generation {record.generation_count})" if record.config
                             else "Mastra defaults (the record stores no config)")
        self._message_tokens.setText(_threshold_text(s.message_tokens, status.threshold))
        self._observation_tokens.setText(_threshold_text(s.reflection_tokens))
        if s.async_observation_enabled:
            parts = [f"every {s.buffer_tokens:,} tokens"]
            if s.buffer_activation is not None:
                parts.append(f"activation {s.buffer_activation:g}")
            if s.block_after is not None:
                parts.append(f"block after {s.block_after:g}")
            if s.async_reflection_enabled:
                parts.append("reflection buffered")
            self._buffering.setText(", ".join(parts))
        else:
            self._buffering.setText("off")
        self._observer_model.setText(s.observation_model or fmt.NONE)
        self._reflector_model.setText(s.reflection_model or fmt.NONE)
        self._message_tokens.setToolTip(f"Threshold in force: {status.threshold:,} tokens "
                                        f"(upper bound {max_threshold(s.message_tokens):,})")

    def _show_flags(self, status: ThreadStatus | None) -> None:
        states = {f.name: f for f in (status.flags if status else [])}
        for name, badge in self._flag_labels.items():
            flag: FlagState | None = states.get(name)
            if flag is None:
                badge.setText("not stored" if status else fmt.NONE)
                set_role(badge, "badge")
                badge.setToolTip("")
            elif not flag.set:
                badge.setText("off")
                set_role(badge, "badge")
                badge.setToolTip("")
            elif flag.stale:
                badge.setText(f"on · stale ({fmt.age(flag.age_ms)} old)")
                set_role(badge, "badge-stale")
                badge.setToolTip(STALE_TIP)
            else:
                badge.setText(f"on · live ({fmt.age(flag.age_ms)})")
                set_role(badge, "badge-live")
                badge.setToolTip("Set recently: a process is probably working on this record now.")

    def _show_thread_state(self, thread: Thread) -> None:
        om = thread.om_metadata
        task = om.get("currentTask")
        suggested = om.get("suggestedResponse")
        self._current_task.setText(task if isinstance(task, str) and task else fmt.NONE)
        self._suggested.setText(suggested if isinstance(suggested, str) and suggested else fmt.NONE)

    def _show_chunks(self, record: OMRecord, status: ThreadStatus | None) -> None:
        chunks = record.buffered_chunks
        self.activate_button.setVisible(bool(chunks))
        self.chunk_model.set_chunks(chunks)
        if chunks:
            self.chunks_view.setCurrentIndex(self.chunk_model.index(0, 0))
        else:
            self._on_chunks_current_changed(self.chunk_model.index(-1, 0), None)
        self._chunks_summary.setText(self._chunks_text(record, status))

    @staticmethod
    def _chunks_text(record: OMRecord, status: ThreadStatus | None) -> str:
        """Return the line above the buffered chunks (how many, their tokens, what activating would remove)."""
        chunks = record.buffered_chunks
        if chunks:
            obs = sum(int(c.get("tokenCount") or 0) for c in chunks)
            msg = sum(int(c.get("messageTokens") or 0) for c in chunks)
            text = (f"{len(chunks)} chunk{'s' if len(chunks) != 1 else ''} waiting for activation · "
                    f"{obs:,} observation tokens from {msg:,} message tokens")
            if status is not None and status.projected_removal_tokens:
                text += f" · activating now would remove {status.projected_removal_tokens:,} message tokens"
        elif status is not None and not status.async_observation_enabled:
            text = "Async buffering is off for this record (no bufferTokens in its config)."
        else:
            text = "No buffered chunks."
        return text

    def _show_log(self, detail: ThreadDetail) -> None:
        log = detail.log
        self.log_model.set_log(log)
        self.log_view.expandAll()
        record = detail.record
        if log is None or not log.observations:
            self._log_summary.setText(f"Generation {record.generation_count} · "
                                      f"{fmt.tokens(record.observation_token_count)} tokens")
            self.log_view.setVisible(bool(log and log.lines))
            self._log_empty.setVisible(not (log and log.lines))
            return
        self.log_view.setVisible(True)
        self._log_empty.setVisible(False)
        counts = log.count_by_priority()
        order = ["high", "medium", "low", "completed", "none"]
        by_prio = ", ".join(f"{counts[k]} {k if k != 'none' else 'unmarked'}" for k in order if counts.get(k))
        n = len(log.observations)
        b = len(log.boundaries)
        d = len(log.dates)
        self._log_summary.setText(
            f"Generation {record.generation_count} · {record.observation_token_count:,} tokens · "
            f"{n} observation{'s' if n != 1 else ''} ({by_prio}) · {d} date"
            f"{'s' if d != 1 else ''} · {b} message boundar{'ies' if b != 1 else 'y'}")
