"""Thread ▸ Messages: the paged message table and the selected message's full text and parts."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QHeaderView, QPlainTextEdit, QSplitter, QTabWidget, QVBoxLayout, QWidget

from studio.ui import format as fmt
from studio.ui.loaders import MessageRow
from studio.ui.models.messages import MessageColumn, MessageTableModel
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label, table_view

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


class MessagesTab(QWidget):
    """The thread's messages (read a page at a time) with a detail pane for the selected one."""

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self.model = MessageTableModel(runner, self)
        self.view = table_view()
        self.view.setModel(self.model)
        header = self.view.horizontalHeader()
        # Fixed widths from the font: sizing to contents would read every loaded row (20,000 in a big thread).
        fm = self.fontMetrics()
        widths = {MessageColumn.NUMBER: fm.horizontalAdvance("00000") + 14,
                  MessageColumn.ROLE: fm.horizontalAdvance("assistant") + 18,
                  MessageColumn.TIME: fm.horizontalAdvance("Nov 29 20:42:27") + 18,
                  MessageColumn.ESTIMATE: fm.horizontalAdvance("Estimate") + 24,
                  MessageColumn.EXACT: fm.horizontalAdvance("Estimate") + 24}
        for c, width in widths.items():
            header.setSectionResizeMode(c, QHeaderView.ResizeMode.Interactive)
            header.resizeSection(c, width)
        header.setSectionResizeMode(MessageColumn.TEXT, QHeaderView.ResizeMode.Stretch)
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_changed)
        self.view.end_requested.connect(self._on_view_end_requested)
        self._following_end = False
        self.model.modelReset.connect(self._on_model_reset)
        self.model.page_loaded.connect(self._on_model_page_loaded)

        self.summary = plain_label("", "muted")
        self.header = plain_label("", wrap=True)
        mono = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        self.text_view = QPlainTextEdit()
        self.text_view.setReadOnly(True)
        self.parts_view = QPlainTextEdit()
        self.parts_view.setReadOnly(True)
        self.parts_view.setFont(mono)
        self.parts_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.detail_tabs = QTabWidget()
        self.detail_tabs.addTab(self.text_view, "Text")
        self.detail_tabs.addTab(self.parts_view, "Parts")

        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.summary)
        tl.addWidget(self.view)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(self.header)
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
        self._show_row(None)

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's messages (None: none)."""
        self._selected_id = None
        self._following_end = False
        self.model.set_thread(thread_id)
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
        self.summary.setText(f"{loaded:,} of {total:,} message{'s' if total != 1 else ''} loaded{more}")
        if self._following_end and loaded:
            self.select_row(loaded - 1)
            self.view.scrollToBottom()
            if loaded >= total:
                self._following_end = False
            elif self.model.canFetchMore():   # else a page is already on its way
                self.model.fetchMore()
            return
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
        if row is None:
            self.header.setText("Select a message to read it in full.")
            self.text_view.setPlainText("")
            self.parts_view.setPlainText("")
            return
        m = row.message
        kinds = [str(p.get("type")) for p in m.parts if isinstance(p, dict)]
        bits = [m.role, fmt.local_time(m.created_at, seconds=True),
                f"{fmt.tokens(row.estimate)} tokens (Mastra estimate)", f"{fmt.tokens(row.exact)} exact (o200k)",
                f"{len(kinds)} part{'s' if len(kinds) != 1 else ''}" + (f": {', '.join(kinds)}" if kinds else ""),
                f"id {m.id}"]
        if m.content_error:
            bits.append(f"content is not JSON ({m.content_error})")
        self.header.setText(" · ".join(bits))
        self.text_view.setPlainText(m.text)
        self.parts_view.setPlainText(parts_text(row))
