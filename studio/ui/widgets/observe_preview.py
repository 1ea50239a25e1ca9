"""What the Observe Now dialog shows for a preview: the token figures, the window that would be observed
(one row per message), the new observation lines, and the proposed thread state. Plain text only."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QGroupBox,
    QHeaderView,
    QPlainTextEdit,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.observation import ObservePreview
from studio.engine import tokens
from studio.engine.diff import diff_logs
from studio.ui.models.diff import DiffModel
from studio.ui.widgets.common import plain_label
from studio.ui.widgets.history_tab import diff_table_view, layout_diff_columns
from studio.ui.widgets.reflect_preview import in_words

#: Characters of a message shown in the window table (the whole text is in the tooltip).
ROW_TEXT = 240


def summary_text(p: ObservePreview) -> str:
    """Return the one-paragraph figures of P: messages and tokens observed, the log before → after vs the threshold."""
    w, r = p.window, p.proposal
    new = tokens.count_observations(r.new_lines)
    after = (f"{'at or over' if r.tokens_after >= r.reflection_threshold else 'below'} the "
             f"{r.reflection_threshold:,}-token reflection threshold")
    gate = "window: " + w.gate_text().replace("-token threshold", "-token observation threshold") + \
        ("" if w.meets else " (Mastra would wait)")
    return (f"{len(w.message_ids):,} message(s) observed · {gate} · observation log {r.tokens_before:,} → "
            f"{r.tokens_after:,} tokens ({fmt.signed(r.tokens_after - r.tokens_before)}; the new lines {new:,}) "
            f"· {after}")


class ObservePreviewView(QWidget):
    """A proposed observation: figures, the window's messages, the new lines, the proposed thread state."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.summary = plain_label("", wrap=True)
        self.how = plain_label("", "muted", wrap=True)
        self.notes = plain_label("", "muted", wrap=True)

        self.window_table = QTableWidget(0, 5)
        self.window_table.setHorizontalHeaderLabels(["Time", "Thread", "Role", "Tokens", "Text"])
        self.window_table.verticalHeader().hide()
        self.window_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.window_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.window_table.setWordWrap(False)
        self.window_table.setTabKeyNavigation(False)
        header = self.window_table.horizontalHeader()
        for col in range(4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        window_box = QGroupBox("Window to observe")
        QVBoxLayout(window_box).addWidget(self.window_table)

        # the new lines as History shows a diff's added lines: priority icons, times, indentation
        self.lines_model = DiffModel(self)
        self.lines_view = diff_table_view(self.lines_model)
        layout_diff_columns(self.lines_view, self.lines_model)
        self._new_lines = ""
        lines_box = QGroupBox("New observation lines")
        QVBoxLayout(lines_box).addWidget(self.lines_view)

        self.state = QPlainTextEdit()
        self.state.setReadOnly(True)
        self.state.setMaximumHeight(96)
        state_box = QGroupBox("Proposed thread state (metadata.mastra.om, title)")
        QVBoxLayout(state_box).addWidget(self.state)

        top = QSplitter(Qt.Orientation.Horizontal)
        top.setChildrenCollapsible(False)
        top.addWidget(window_box)
        top.addWidget(lines_box)
        top.setStretchFactor(0, 1)
        top.setStretchFactor(1, 1)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(top)
        self.splitter.addWidget(state_box)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 1)

        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(4)
        col.addWidget(self.summary)
        col.addWidget(self.how)
        col.addWidget(self.notes)
        col.addWidget(self.splitter, 1)

    def clear(self) -> None:
        """Show nothing."""
        self.window_table.setRowCount(0)
        self.lines_model.set_diff(None)
        self._new_lines = ""
        self.state.setPlainText("")

    def show_preview(self, p: ObservePreview) -> None:
        """Show P as plain text."""
        r = p.proposal
        self.summary.setText(summary_text(p))
        how = f"Model {r.model}" if r.strategy == "llm" else "Offline rule-based Observer"
        if r.usage.input_tokens is not None or r.usage.output_tokens is not None:
            how += f" · provider usage {fmt.tokens(r.usage.input_tokens)} in / {fmt.tokens(r.usage.output_tokens)} out"
        self.how.setText(f"{how} · {r.elapsed_ms / 1000:.1f} s")
        self.notes.setText("\n".join(in_words(n) for n in r.notes))
        self.notes.setVisible(bool(r.notes))
        self.window_table.setColumnHidden(1, not r.resource_scope)   # one thread: its id says nothing
        self.window_table.setRowCount(len(p.rows))
        for i, row in enumerate(p.rows):
            flat = " ".join(row.text.split())
            cells = [fmt.local_time(row.created_at, seconds=True) if row.created_at else fmt.NONE, row.thread_id,
                     row.role, f"{row.tokens:,}", flat[:ROW_TEXT] + ("…" if len(flat) > ROW_TEXT else "")]
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if c == 4:
                    item.setToolTip(fmt.plain_tooltip(row.text[:4000]))
                self.window_table.setItem(i, c, item)
        self._new_lines = r.new_lines
        new_tokens = tokens.count_observations(r.new_lines)
        self.lines_model.set_diff(diff_logs("", r.new_lines, 0, new_tokens), "Log so far", "New lines")
        layout_diff_columns(self.lines_view, self.lines_model)
        parts = []
        for thread_id, hints in r.hints().items():
            prefix = f"[{thread_id}] " if r.resource_scope else ""
            task = hints["current_task"] or "(none: the key is removed, as Mastra does)"
            parts.append(f"{prefix}Current task: {task}")
            parts.append(f"{prefix}Suggested response: {hints['suggested_response'] or '(none: the key is removed)'}")
            if hints["thread_title"]:
                parts.append(f"{prefix}Thread title: {hints['thread_title']} (set when 3+ characters, different "
                             "and not pinned)")
        self.state.setPlainText("\n".join(parts))

    def new_lines_text(self) -> str:
        """Return the new observation lines shown (as the commit appends them)."""
        return self._new_lines

    def row_count(self) -> int:
        """Return how many window messages are listed."""
        return self.window_table.rowCount()
