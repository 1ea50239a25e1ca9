"""What the Reflect Now dialog shows: the log's size against the threshold, and a proposed generation
(figures, attempts, lost high-priority observations, the current → proposed diff, the thread state)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.reflection import LLM, Preview
from studio.ui.models.diff import DiffMode, DiffModel, display_line
from studio.ui.style import BarValue, paint_bar
from studio.ui.widgets.common import plain_label
from studio.ui.widgets.history_tab import diff_table_view, layout_diff_columns
from studio.ui.widgets.loss_callout import LossCallout

#: Priority markers named in words (the engine's notes use the emoji, which not every system can draw).
MARKER_WORDS = {"🔴": "high-priority", "🟡": "medium-priority", "🟢": "low-priority", "✅": "completed"}


def in_words(text: str) -> str:
    """Return TEXT with the priority emoji replaced by their names ("🔴" -> "high-priority")."""
    for marker, word in MARKER_WORDS.items():
        text = text.replace(marker, word)
    return text


def attempts_text(attempts) -> str:
    """Return "Attempts — 1: level 1, 612 tokens; 2: level 2, degenerate (repetitive)" for Reflector attempts."""
    parts = []
    for i, a in enumerate(attempts, 1):
        what = "degenerate (repetitive)" if a.degenerate else "empty" if a.empty else f"{a.tokens:,} tokens"
        parts.append(f"{i}: level {a.level}, {what}")
    return "Attempts — " + "; ".join(parts)


def state_text(proposed: str | None, prior: str | None) -> str:
    """Return a proposed thread-state value, or "unchanged: <prior>" (Mastra keeps the old value when none is given)."""
    if proposed is not None:
        return proposed
    return f"unchanged: {prior}" if prior else f"unchanged ({fmt.NONE})"


class SizeBar(QWidget):
    """One line: the log's tokens against the reflection threshold, as a bar with the figures inside."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.bar = BarValue(placeholder="")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_value(self, value: int | None, threshold: int | None) -> None:
        """Show VALUE / THRESHOLD tokens (None: unknown)."""
        self.bar = BarValue(value, threshold, placeholder=fmt.NONE)
        self.update()

    def text(self) -> str:
        """Return the figures drawn ("451 / 550 · 82%")."""
        return self.bar.text

    def sizeHint(self) -> QSize:
        return QSize(320, self.fontMetrics().height() + 8)

    def minimumSizeHint(self) -> QSize:
        return QSize(120, self.fontMetrics().height() + 8)

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        paint_bar(p, QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), self.bar, light=True, radius=4)
        p.end()


class ProposalView(QWidget):
    """A proposed generation against the current one: summary, attempts, losses callout, diff, thread state."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.summary = plain_label("", wrap=True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.unified_button = QPushButton("Unified")
        self.side_button = QPushButton("Side by side")
        self._mode_group = QButtonGroup(self)
        for b in (self.unified_button, self.side_button):
            b.setCheckable(True)
            b.setAutoDefault(False)
            self._mode_group.addButton(b)
        self.unified_button.setChecked(True)
        self._mode_group.buttonToggled.connect(self._on_mode_group_button_toggled)
        summary_row = QHBoxLayout()
        summary_row.addWidget(self.summary, 1)
        summary_row.addWidget(self.unified_button, 0, Qt.AlignmentFlag.AlignTop)
        summary_row.addWidget(self.side_button, 0, Qt.AlignmentFlag.AlignTop)
        self.attempts_label = plain_label("", "muted", wrap=True)
        self.notes_label = plain_label("", "muted", wrap=True)
        self.losses = LossCallout()
        self.losses.hide()

        self.diff_model = DiffModel(self)
        self.diff_view = diff_table_view(self.diff_model)
        layout_diff_columns(self.diff_view, self.diff_model)

        state = QGroupBox("Proposed thread state (metadata.mastra.om)")
        form = QFormLayout(state)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setVerticalSpacing(4)
        self.task_label = plain_label("", wrap=True)
        self.response_label = plain_label("", wrap=True)
        self.title_label = plain_label("", wrap=True)
        form.addRow(plain_label("Current task", "muted", selectable=False), self.task_label)
        form.addRow(plain_label("Suggested response", "muted", selectable=False), self.response_label)
        form.addRow(plain_label("Thread title", "muted", selectable=False), self.title_label)
        self._state_form = form

        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.diff_view)
        self.splitter.addWidget(state)
        self.splitter.setStretchFactor(0, 4)
        self.splitter.setStretchFactor(1, 1)

        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(4)
        col.addLayout(summary_row)
        col.addWidget(self.attempts_label)
        col.addWidget(self.notes_label)
        col.addWidget(self.losses)
        col.addWidget(self.splitter, 1)

    def clear(self) -> None:
        """Show nothing."""
        self.diff_model.set_diff(None)
        self.losses.hide()

    def show_preview(self, p: Preview) -> None:
        """Show P: token figures, compression, attempts and notes, every lost 🔴 line, the diff, the thread state."""
        r, d, inp = p.result, p.diff, p.input
        below = (f"below the {r.reflection_threshold:,}-token reflection threshold" if r.reached_target
                 else f"NOT below the {r.reflection_threshold:,}-token reflection threshold")
        self.summary.setText(
            f"Generation {inp.generation_count} → proposed generation {p.new_generation} · "
            f"tokens {d.old_tokens:,} → {d.new_tokens:,} ({fmt.signed(d.token_delta)}) · "
            f"compression {fmt.ratio(d.compression_ratio)} · {below} · "
            f"{d.kept:,} kept, +{d.added:,} added, −{d.removed:,} removed")
        how = f"Model {r.model}" if r.strategy == LLM else "Offline rule-based condenser"
        used = ""
        if r.usage.input_tokens is not None or r.usage.output_tokens is not None:
            used = (f" · provider usage {fmt.tokens(r.usage.input_tokens)} in / "
                    f"{fmt.tokens(r.usage.output_tokens)} out")
        self.attempts_label.setText(f"{how} · {attempts_text(r.attempts)}{used}")
        self.notes_label.setText("\n".join(in_words(n) for n in r.notes))
        self.notes_label.setVisible(bool(r.notes))
        self.diff_model.set_diff(d, f"Generation {inp.generation_count}", f"Proposed {p.new_generation}")
        layout_diff_columns(self.diff_view, self.diff_model)
        losses = d.high_priority_losses
        if losses:
            head = f"{len(losses)} high-priority observation{'s' if len(losses) != 1 else ''} would be lost"
            lines = ["Not found anywhere in the proposed log (bold red rows in the diff):"]
            self.losses.set_losses(head, lines + [f"− {display_line(row.text).strip()}" for row in losses])
        self.losses.setVisible(bool(losses))
        self.task_label.setText(state_text(r.current_task, inp.prior_current_task))
        self.response_label.setText(state_text(r.suggested_response, inp.prior_suggested_response))
        self.title_label.setText(f"{r.thread_title}  (proposed by the model; a reflection does not store it)"
                                 if r.thread_title else fmt.NONE)
        self._state_form.setRowVisible(self.title_label, bool(r.thread_title))

    def _on_mode_group_button_toggled(self, button, checked: bool) -> None:
        if checked:
            self.diff_model.set_mode(DiffMode.SIDE_BY_SIDE if button is self.side_button else DiffMode.UNIFIED)
            layout_diff_columns(self.diff_view, self.diff_model)
