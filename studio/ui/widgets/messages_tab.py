"""Thread ▸ Messages: the paged message table, its filters, and the selected message's full text and parts.

Filters (all AND-ed, applied off the GUI thread): a date range (inclusive ISO bounds, as recall's
dateRange), message metadata `key=value` conditions (recall's metadata filter, validated by its
rules), a speaker (from the `<turn>` tags), and text. "Show in context" clears the filters and
selects the message among all the thread's messages. The Speaker column shows name and role;
"Raw tags" shows the stored text with its `<turn>` tags. Stored text is always plain text.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.messages import AGENT, UNTAGGED, MessageFilters, MessageRow, describe_speaker_filter, message_position
from studio.app.uncountable import UNCOUNTABLE_MARK
from studio.common.metadata_filter import ValidationError, parse_key_values
from studio.engine.speakers import SpeakerReport
from studio.store.cells import DAMAGED_TEXT_NOTE
from studio.store.history import js_date_iso
from studio.ui.models.messages import MessageColumn, MessageTableModel
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label, table_view

#: Milliseconds the filters wait after the last keystroke before re-reading.
FILTER_DELAY_MS = 350
ALL_SPEAKERS = "All speakers"

#: Strings longer than this (base64 file data, long tool results) are shortened in the parts view.
PART_STRING_LIMIT = 600


def _shorten(value: Any) -> Any:
    if isinstance(value, str) and len(value) > PART_STRING_LIMIT:
        return f"{value[:PART_STRING_LIMIT]}… ({len(value):,} characters)"
    if isinstance(value, dict):
        return {k: _shorten(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shorten(v) for v in value]
    return value


def parts_text(row: MessageRow) -> str:
    """Return the message's parts as indented JSON (long strings shortened), or its raw content."""
    m = row.message
    if m.parts:
        return json.dumps(_shorten(m.parts), indent=2, ensure_ascii=False)
    if isinstance(m.content, str):
        return m.content
    return json.dumps(_shorten(m.content), indent=2, ensure_ascii=False)


#: The share of the table's width the Text preview keeps at least, else the other columns go compact.
TEXT_SHARE = 0.45


class MessagesTab(QWidget):
    """The thread's messages (read a page at a time, optionally filtered) with a detail pane for the selected one."""

    filters_applied = Signal(object)   # the MessageFilters now shown
    context_shown = Signal(str)        # the message id selected by "Show in context"

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._speakers: SpeakerReport | None = None
        self.model = MessageTableModel(runner, self)
        self.view = table_view()
        self.view.setModel(self.model)
        header = self.view.horizontalHeader()
        # Fixed widths from the font (sizing to contents would read every loaded row: 20,000 in a big
        # thread), snug, and compact when the table is narrow, so the Text preview keeps the room.
        self._compact: bool | None = None
        self._speaker_hidden = True
        self._offered: list | None = None   # the speaker filter's items as last made (`_speaker_items`)
        for c in self.column_widths(False):
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
        self._set_compact(False)
        self.view.viewport().installEventFilter(self)
        header.setSectionResizeMode(MessageColumn.TEXT, QHeaderView.ResizeMode.Stretch)
        header.setStretchLastSection(False)
        header.moveSection(header.visualIndex(MessageColumn.SPEAKER), header.visualIndex(MessageColumn.ROLE) + 1)
        self.view.setColumnHidden(MessageColumn.SPEAKER, True)   # shown once the thread's speakers are known
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_changed)
        self.view.end_requested.connect(self._on_view_end_requested)
        self._following_end = False
        self.model.modelReset.connect(self._on_model_reset)
        self.model.page_loaded.connect(self._on_model_page_loaded)
        self.model.load_failed.connect(self._on_model_load_failed)
        self._build_filters()

        self.summary = plain_label("", "muted", wrap=True)   # a long error must not widen the window
        self.header = plain_label("", wrap=True)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.text_view = QPlainTextEdit()
        self.text_view.setReadOnly(True)
        self.parts_view = QPlainTextEdit()
        self.parts_view.setReadOnly(True)
        self.parts_view.setFont(mono)
        # Small windows: the filter bar takes two rows, so the table and the detail may get short.
        self.view.setMinimumHeight(self.view.verticalHeader().defaultSectionSize() * 2)
        for edit in (self.text_view, self.parts_view):
            edit.setMinimumHeight(edit.fontMetrics().height() * 2 + 8)
        self.parts_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.detail_tabs = QTabWidget()
        self.detail_tabs.addTab(self.text_view, "Text")
        self.detail_tabs.addTab(self.parts_view, "Parts")

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.filter_bar)
        tl.addWidget(self.filter_error)
        tl.addWidget(self.summary)
        tl.addWidget(self.view)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        head_row = QHBoxLayout()
        head_row.addWidget(self.header, 1)
        head_row.addWidget(self.context_button, 0, Qt.AlignmentFlag.AlignTop)
        dl.addLayout(head_row)
        dl.addWidget(self.detail_tabs)
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(top)
        split.addWidget(detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        self.splitter = split
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(split)
        self._selected_id: str | None = None
        self._shown: MessageRow | None = None   # the row the detail pane shows
        self._show_row(None)

    # -- column widths ---------------------------------------------------------------------

    def column_widths(self, compact: bool) -> dict[MessageColumn, int]:
        """Return the width (px) of each fixed column; COMPACT: headers "Est."/"Exact", times as the
        clock with seconds (the date in the tooltip), a shorter Speaker (cells elide; the full values are in the
        detail line below)."""
        fm = self.fontMetrics()
        if not compact:
            return {MessageColumn.NUMBER: fm.horizontalAdvance("00000") + 12,
                    MessageColumn.ROLE: fm.horizontalAdvance("assistant") + 14,
                    MessageColumn.TIME: fm.horizontalAdvance("Nov 29 20:42:27") + 14,
                    MessageColumn.ESTIMATE: fm.horizontalAdvance("Estimate") + 14,
                    MessageColumn.EXACT: fm.horizontalAdvance("Estimate") + 14,
                    MessageColumn.SPEAKER: fm.horizontalAdvance("Alice Baker (editor)") + 12}
        number = fm.horizontalAdvance("0000") + 10
        tokens = max(fm.horizontalAdvance("00,000"), fm.horizontalAdvance("Exact")) + 12
        return {MessageColumn.NUMBER: number,
                MessageColumn.ROLE: fm.horizontalAdvance("assistant") + 10,
                MessageColumn.TIME: fm.horizontalAdvance("20:42:27") + 12,
                MessageColumn.ESTIMATE: tokens,
                MessageColumn.EXACT: tokens,
                MessageColumn.SPEAKER: fm.horizontalAdvance("Alice (editor)") + 12}

    def _set_compact(self, compact: bool) -> None:
        merged = compact and not self._speaker_hidden
        self.view.setColumnHidden(MessageColumn.ROLE, merged)
        self.model.set_compact(compact, role_in_speaker=merged)
        if compact == self._compact:
            return
        self._compact = compact
        header = self.view.horizontalHeader()
        for c, width in self.column_widths(compact).items():
            header.resizeSection(c, width)

    def _fit_columns(self) -> None:
        """Go compact when the full-width columns would leave the Text preview under TEXT_SHARE of the table.

        Compact with a Speaker column also folds Role into it ("Who": the speaker, else the role)."""
        width = self.view.viewport().width()
        if width <= 0:
            return
        fixed = sum(w for c, w in self.column_widths(False).items()
                    if c != MessageColumn.SPEAKER or not self._speaker_hidden)
        self._set_compact(width - fixed < TEXT_SHARE * width)

    def eventFilter(self, watched, event) -> bool:
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_columns()
        return super().eventFilter(watched, event)

    # -- filters ---------------------------------------------------------------------------

    def _build_filters(self) -> None:
        self.from_edit = QLineEdit()
        self.from_edit.setPlaceholderText("From (2026-03-01 or ISO time)")
        self.to_edit = QLineEdit()
        self.to_edit.setPlaceholderText("To (inclusive)")
        self.metadata_edit = QLineEdit()
        self.metadata_edit.setPlaceholderText("Metadata: key=value, …")
        self.metadata_edit.setToolTip("Message metadata conditions, all required (Mastra's recall metadata filter): "
                                      "category=billing, priority=2, escalated=true, archivedAt=null")
        self.text_edit = QLineEdit()
        self.text_edit.setPlaceholderText("Find text")
        self.speaker_combo = QComboBox()
        self.speaker_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.speaker_combo.setMinimumContentsLength(14)
        self.raw_check = QCheckBox("Raw tags")
        self.raw_check.setToolTip("Show messages as stored, with their <turn …> tags")
        self.clear_button = QPushButton("Clear")
        self.clear_button.setToolTip("Remove every filter")
        self.context_button = QPushButton("Show in context")
        self.context_button.setToolTip("Show this message among all the thread's messages (filters cleared)")
        self.context_button.setEnabled(False)
        for edit in (self.from_edit, self.to_edit, self.metadata_edit, self.text_edit):
            edit.setClearButtonEnabled(True)
            edit.textChanged.connect(self._on_filter_edit_text_changed)
            edit.returnPressed.connect(self.apply_filters)
        self.speaker_combo.currentIndexChanged.connect(self._on_speaker_combo_changed)
        self.raw_check.toggled.connect(self._on_raw_check_toggled)
        self.clear_button.clicked.connect(self.clear_filters)
        self.context_button.clicked.connect(self._on_context_button_clicked)
        self._set_speaker_items(None)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(FILTER_DELAY_MS)
        self._timer.timeout.connect(self.apply_filters)

        self.filter_bar = QWidget()
        rows = QVBoxLayout(self.filter_bar)
        rows.setContentsMargins(0, 0, 0, 0)
        rows.setSpacing(4)
        first, second = QHBoxLayout(), QHBoxLayout()
        first.addWidget(self.from_edit, 1)
        first.addWidget(self.to_edit, 1)
        first.addWidget(self.speaker_combo, 1)
        second.addWidget(self.metadata_edit, 2)
        second.addWidget(self.text_edit, 2)
        second.addWidget(self.raw_check)
        second.addWidget(self.clear_button)
        rows.addLayout(first)
        rows.addLayout(second)
        self.filter_error = plain_label("", "loss", wrap=True)
        self.filter_error.hide()

    @staticmethod
    def _speaker_items(report: SpeakerReport | None) -> list[tuple[str, str | None, str | None]]:
        """The speaker filter's items for REPORT: (text, speaker key or filter value, tooltip)."""
        items: list[tuple[str, str | None, str | None]] = [(ALL_SPEAKERS, None, None)]
        for sp in (report.speakers if report is not None else []):
            items.append((f"{sp.label} · {sp.messages:,}", sp.key,
                          fmt.plain_tooltip(f"{sp.label}\nauthor_id {sp.author_id or '(none)'}")))
        if report is not None and report.untagged_messages:
            items.append((f"Untagged user messages · {report.untagged_messages:,}", UNTAGGED, None))
        items.append(("Agent (assistant, tools)", AGENT, None))
        return items

    def _set_speaker_items(self, report: SpeakerReport | None) -> None:
        items = self._speaker_items(report)
        if items == self._offered:   # the same speakers and counts (a live refresh's report, say): nothing to redo
            return
        self._offered = items
        current = self.speaker_combo.currentData()
        self.speaker_combo.blockSignals(True)
        self.speaker_combo.clear()
        for text, key, tip in items:
            self.speaker_combo.addItem(text, key)
            if tip is not None:
                self.speaker_combo.setItemData(self.speaker_combo.count() - 1, tip, Qt.ItemDataRole.ToolTipRole)
        index = self.speaker_combo.findData(current)
        if current is not None and index < 0:   # a speaker not (yet) listed: keep it selectable
            self.speaker_combo.addItem(describe_speaker_filter(current, report), current)
            index = self.speaker_combo.count() - 1
            self._offered = None   # the combo holds more than ITEMS: made again next time
        self.speaker_combo.setCurrentIndex(max(index, 0))
        self.speaker_combo.blockSignals(False)

    def set_speakers(self, report: SpeakerReport | None) -> None:
        """Offer REPORT's speakers in the speaker filter (the Participants tab's report for this thread)."""
        if report is not None and report.thread_id != self.model.thread_id:
            return
        self._speakers = report
        self._set_speaker_items(report)
        self._show_speaker_column(report)

    def _show_speaker_column(self, report: SpeakerReport | None) -> None:
        """Show the Speaker column only when REPORT (the thread's speakers) names one; else Text gets the room."""
        hidden = report is None or not report.speakers
        if hidden != self._speaker_hidden or self.view.isColumnHidden(MessageColumn.SPEAKER) != hidden:
            self._speaker_hidden = hidden
            self.view.setColumnHidden(MessageColumn.SPEAKER, hidden)
        self._fit_columns()

    def filter_by_speaker(self, key: str | None) -> None:
        """Show only KEY's messages (a speaker key, UNTAGGED or AGENT; None: every speaker)."""
        index = self.speaker_combo.findData(key)
        if index < 0:
            self.speaker_combo.addItem(describe_speaker_filter(key, self._speakers), key)
            index = self.speaker_combo.count() - 1
            self._offered = None   # the combo holds more than the report's items: made again next time
        self.speaker_combo.setCurrentIndex(index)   # applies at once
        self.apply_filters()

    def read_filters(self) -> MessageFilters:
        """Return the filters the bar describes; raise ValidationError for a bad date or metadata condition."""
        start = self.from_edit.text().strip()
        end = self.to_edit.text().strip()
        return MessageFilters(
            start=js_date_iso(start) if start else None,
            end=js_date_iso(_end_of_day(end)) if end else None,
            metadata=MessageFilters.metadata_items(parse_key_values(self.metadata_edit.text())),
            speaker=self.speaker_combo.currentData(),
            text=self.text_edit.text().strip(),
            raw=self.raw_check.isChecked())

    def apply_filters(self) -> None:
        """Read the filter bar and re-read the messages that pass it (a bad condition is shown, not applied)."""
        self._timer.stop()
        try:
            filters = self.read_filters()
        except ValidationError as exc:
            self.filter_error.setText(str(exc))
            self.filter_error.show()
            return
        self.filter_error.hide()
        if self.model.thread_id is None:
            return
        if filters != self.model.filters:
            self.summary.setText("Filtering…" if filters.active else "Loading…")
            self.model.set_filters(filters)
            self.filters_applied.emit(filters)

    def clear_filters(self) -> None:
        """Remove every filter and show all messages."""
        for edit in (self.from_edit, self.to_edit, self.metadata_edit, self.text_edit):
            edit.blockSignals(True)
            edit.clear()
            edit.blockSignals(False)
        self.speaker_combo.blockSignals(True)
        self.speaker_combo.setCurrentIndex(0)
        self.speaker_combo.blockSignals(False)
        self.apply_filters()

    def _on_filter_edit_text_changed(self, _text: str) -> None:
        self._timer.start()

    def _on_speaker_combo_changed(self, _index: int) -> None:
        self.apply_filters()

    def _on_raw_check_toggled(self, checked: bool) -> None:
        self.model.set_raw_tags(checked)
        current = self.view.currentIndex()
        self._show_row(self.model.message_row(current.row()) if current.isValid() else None)
        if self.text_edit.text().strip():
            self.apply_filters()   # the text filter reads what is shown

    # -- show in context ---------------------------------------------------------------------

    def show_in_context(self, message_id: str | None = None) -> None:
        """Clear the filters and select MESSAGE_ID (default: the selected one) among all the thread's messages."""
        message_id = message_id or self._selected_id
        thread_id = self.model.thread_id
        if not message_id or thread_id is None:
            return
        self.summary.setText("Finding the message…")
        self._runner.submit(lambda store, _p, _c: message_position(store, thread_id, message_id),
                            on_done=lambda row: self._on_position_found(thread_id, message_id, row),
                            on_error=self._on_model_load_failed, key="message-position")

    def _on_position_found(self, thread_id: str, message_id: str, row: int) -> None:
        if thread_id != self.model.thread_id:
            return
        if row < 0:
            self._on_model_load_failed("The message no longer exists.")
            return
        self._selected_id = message_id
        if self.model.filtered:
            self.clear_filters()
        self.model.load_through(row, lambda: self._select_message(message_id))

    def _select_message(self, message_id: str) -> None:
        row = self.model.row_of(message_id)
        if row >= 0:
            self.select_row(row)
            self.view.scrollTo(self.model.index(row, 0), self.view.ScrollHint.PositionAtCenter)
            self.context_shown.emit(message_id)

    def _on_context_button_clicked(self) -> None:
        self.show_in_context()

    def _on_model_load_failed(self, message: str) -> None:
        self.summary.setText(f"Could not read the messages: {message}")

    # -- thread ------------------------------------------------------------------------------

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's messages (None: none); a new thread starts unfiltered."""
        self._selected_id = None
        self._following_end = False
        if thread_id != self.model.thread_id:
            self._speakers = None
            for edit in (self.from_edit, self.to_edit, self.metadata_edit, self.text_edit):
                edit.blockSignals(True)
                edit.clear()
                edit.blockSignals(False)
            self._set_speaker_items(None)
            self._show_speaker_column(None)
            self.filter_error.hide()
            self._timer.stop()
        filters = self.model.filters if thread_id == self.model.thread_id else MessageFilters()
        self.model.set_thread(thread_id, filters)
        self._show_row(None)
        self.summary.setText("Loading…" if thread_id else "")

    def refresh(self) -> None:
        """Re-read the messages (new ones are appended, the selection is kept)."""
        self.model.refresh()

    def select_row(self, row: int) -> None:
        """Select message ROW."""
        self.view.setCurrentIndex(self.model.index(row, 0))

    @property
    def following_end(self) -> bool:
        """Return True while End keeps loading pages to reach the last message."""
        return self._following_end

    def _on_view_end_requested(self) -> None:
        self._following_end = True
        if self.model.canFetchMore():
            self.model.fetchMore()

    def _on_model_page_loaded(self, loaded: int) -> None:
        total = self.model.total
        more = " (scroll or press End for more)" if loaded < total else ""
        if self.model.filtered:
            self.summary.setText(f"{total:,} message{'s' if total != 1 else ''} match the filters"
                                 f" ({loaded:,} loaded){more}")
        else:
            self.summary.setText(f"{loaded:,} of {total:,} message{'s' if total != 1 else ''} loaded{more}")
        if self._following_end and loaded:
            self.select_row(loaded - 1)
            self.view.scrollToBottom()
            if loaded >= total:
                self._following_end = False
            elif self.model.canFetchMore():   # else a page is already on its way
                self.model.fetchMore()
            return
        current = self.view.currentIndex()
        if current.isValid() and self.model.message_row(current.row()) is not self._shown:
            self._show_row(self.model.message_row(current.row()))   # the selected message was re-read (an upsert)
        if self._selected_id is not None and not self.view.currentIndex().isValid():
            row = self.model.row_of(self._selected_id)
            if row >= 0:
                self.select_row(row)
        elif self._selected_id is None and loaded and not self.view.currentIndex().isValid():
            self.select_row(0)

    def _on_model_reset(self) -> None:
        self._show_row(None)

    def _on_view_current_changed(self, current, _previous) -> None:
        if self._following_end and current.row() != self.model.rowCount() - 1:
            self._following_end = False   # the user went elsewhere
        row = self.model.message_row(current.row()) if current.isValid() else None
        if row is not None:
            self._selected_id = row.message.id
        self._show_row(row)

    def _show_row(self, row: MessageRow | None) -> None:
        self._shown = row
        self.context_button.setEnabled(row is not None)
        if row is None:
            self.text_view.setPlaceholderText("")
            self.header.setText("Select a message to read it in full.")
            self.text_view.setPlainText("")
            self.parts_view.setPlainText("")
            return
        m = row.message
        index = self.model.row_of(m.id)
        att = self.model.attribution(index) if index >= 0 else None
        kinds = [str(p.get("type")) for p in m.parts if isinstance(p, dict)]
        speaker = self.model.speaker_text(index) if index >= 0 else ""
        who = f"{m.role} · {speaker}" if speaker else m.role
        if att is not None and att.parse.turns and att.parse.turns[0].author_id:
            who += f" · author_id {att.parse.turns[0].author_id}"
        bits = [who, fmt.local_time(m.created_at, seconds=True),
                f"{UNCOUNTABLE_MARK} no Mastra estimate" if row.uncountable
                else f"{fmt.tokens(row.estimate)} tokens (Mastra estimate)", f"{fmt.tokens(row.exact)} exact (o200k)",
                f"{len(kinds)} part{'s' if len(kinds) != 1 else ''}" + (f": {', '.join(kinds)}" if kinds else ""),
                f"id {m.id}"]
        if row.uncountable:
            bits.append(row.uncountable)
        if m.content_error:
            bits.append(f"content is not JSON ({m.content_error})")
        if m.damaged_text:
            bits.append(f"stored {', '.join(m.damaged_text)} {DAMAGED_TEXT_NOTE}")
        if att is not None and att.parse.problems:
            bits.append("tag problems: " + "; ".join(dict.fromkeys(att.parse.problems)))
        self.header.setText(" · ".join(bits))
        text = self.model.shown_text(index) if index >= 0 else m.text
        self.text_view.setPlaceholderText(_no_text_hint(kinds) if not text.strip() else "")
        self.text_view.setPlainText(text)
        self.parts_view.setPlainText(parts_text(row))


def _no_text_hint(kinds: list[str]) -> str:
    """Return what the Text pane says for a message without text (a tool call or result, a file…)."""
    if not kinds:
        return "This message has no text and no parts."
    counts = {k: kinds.count(k) for k in dict.fromkeys(kinds)}
    what = ", ".join(f"{n} {k}" for k, n in counts.items())
    return f"This message has no text: its {what} part{'s' if len(kinds) != 1 else ''} are in the Parts tab."


def _end_of_day(text: str) -> str:
    """Return a date-only bound ("2026-03-05") as the last millisecond of that day (UTC), else TEXT."""
    import re

    return f"{text}T23:59:59.999Z" if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else text
