"""The Trace panel: follow a fact through a thread's observation generations, and the search box that starts it.

Every observation line that matches the text is a top-level row; under it, its lifeline: the
messages it was observed from, the generation it first appears in, every later generation that keeps
it (verbatim or reworded, with the similarity; or observed again after its reflection left it out)
and the reflection that dropped it (time, model, compression). The messages that mention the text
are listed last. Clicking a step opens that generation in History with the line highlighted in the
diff; clicking a message opens it in Messages. All text is stored data and is shown as plain text.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.trace import load_trace
from studio.engine.observations import Priority
from studio.engine.trace import Lifeline, LifelineStep, TraceResult
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

TARGET = Qt.ItemDataRole.UserRole
#: Source messages listed under one lifeline (a cycle can cover thousands; the CLI lists them all).
MAX_SOURCE_ROWS = 200
SOURCE_LABELS = {"markers": "observation markers", "cursor": "observation cursor and message times",
                 "reflector": "written by the Reflector", "unknown": "not recorded"}


class TraceSearchBox(QLineEdit):
    """A one-line box: Enter emits `trace_requested(text)` (placed on the OM and History tabs)."""

    trace_requested = Signal(str)

    def __init__(self, parent=None, *, shrinkable: bool = False):
        super().__init__(parent)
        if shrinkable:  # in a crowded row of a small window it gives its width up first
            self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setPlaceholderText("Trace a fact…")
        self.setToolTip("Find every observation line with these words in every generation, and where it went "
                        "(Enter)")
        self.setClearButtonEnabled(True)
        self.returnPressed.connect(self._on_return_pressed)

    def minimumSizeHint(self) -> QSize:
        """Let the box shrink to a few characters: it shares rows with other controls in small windows."""
        hint = super().minimumSizeHint()
        return QSize(min(hint.width(), self.fontMetrics().horizontalAdvance("Trace") + 16), hint.height())

    def _on_return_pressed(self) -> None:
        if self.text().strip():
            self.trace_requested.emit(self.text().strip())


def _line(text: str | None) -> str:
    return " ".join((text or "").split())


def step_text(step: LifelineStep, previous: LifelineStep | None = None) -> str:
    """Return one lifeline step as a sentence."""
    if step.kind == "first":
        return f"Generation {step.generation}: first appears (line {step.line_number}) · {fmt.local_time(step.at)}"
    if step.kind == "verbatim":
        return f"Generation {step.generation}: kept verbatim (line {step.line_number})"
    if step.kind == "reworded":
        return (f"Generation {step.generation}: kept reworded, similarity {step.similarity:.2f} "
                f"(line {step.line_number}): {_line(step.text)}")
    if step.kind == "reobserved":
        return (f"Generation {step.generation}: left out by its reflection, observed again (line "
                f"{step.line_number}) · {fmt.local_time(step.at)}")
    compression = f"{step.compression:.2f}×" if step.compression else "n/a"
    return (f"Generation {step.generation}: dropped by its reflection · model {step.model or 'unknown'} · "
            f"compression {compression} ({fmt.tokens(step.tokens_before)} → {fmt.tokens(step.tokens_after)} "
            f"tokens) · {fmt.local_time(step.at)}")


class TracePanel(QWidget):
    """Search box, then the lifelines of the matching observation lines and the matching messages."""

    generation_requested = Signal(str, int, str)   # OM record id, 1-based line, side "new" | "old"
    message_requested = Signal(str)                # message id
    trace_shown = Signal(object)                   # the TraceResult now shown

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._thread_id: str | None = None
        self.use_helper = False
        self.result: TraceResult | None = None
        self.box = TraceSearchBox()
        self.box.trace_requested.connect(self.trace)
        self.go = QPushButton("Trace")
        self.go.clicked.connect(lambda: self.trace(self.box.text()))
        row = QHBoxLayout()
        row.addWidget(self.box, 1)
        row.addWidget(self.go)
        self.summary = plain_label("Type words of a fact (for example a name or a colour) and press Enter.",
                                   "muted", wrap=True)
        self.tree = QTreeWidget()
        self.tree.setColumnCount(1)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.tree.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.tree.itemClicked.connect(self._on_tree_item_clicked)
        self.tree.itemActivated.connect(self._on_tree_item_clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addLayout(row)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree, 1)

    def set_thread(self, thread_id: str | None) -> None:
        """Trace in THREAD_ID from now on (a new thread clears the results)."""
        if thread_id != self._thread_id:
            self._thread_id = thread_id
            self.tree.clear()
            self.result = None
            self.summary.setText("Type words of a fact (for example a name or a colour) and press Enter.")

    def trace(self, text: str) -> None:
        """Trace TEXT in the current thread (in the background; `trace_shown` when done)."""
        text = (text or "").strip()
        if not text or self._thread_id is None:
            return
        if self.box.text().strip() != text:
            self.box.setText(text)
        self.summary.setText(f"Tracing “{_line(text)}”…")
        self._runner.submit_call(load_trace, self._thread_id, text, helper=self.use_helper,
                                 on_done=self._on_trace_done, on_error=self._on_trace_failed, key="trace")

    def _on_trace_failed(self, exc: Exception) -> None:
        self.summary.setText(f"Could not trace: {exc}")

    def _on_trace_done(self, result: TraceResult) -> None:
        if result.thread_id != self._thread_id:
            return
        self.result = result
        self.tree.clear()
        dropped = sum(1 for ll in result.lifelines if ll.dropped_in is not None)
        self.summary.setText(
            f"{len(result.lifelines)} observation line(s) match “{_line(result.query)}” across "
            f"{result.generations} generation(s), {dropped} of them dropped by a reflection; "
            f"{len(result.messages)} message(s) mention it. Click a step to open it.")
        for life in result.lifelines:
            item = self._lifeline_item(life)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)  # the steps show; the source messages stay folded
        if result.messages:
            top = QTreeWidgetItem([f"Messages that mention it ({len(result.messages)})"])
            for m in result.messages:
                state = {True: "observed", False: "not observed yet", None: "no OM record"}[m.observed]
                child = QTreeWidgetItem([f"{m.role} · {fmt.local_time(m.created_at)} · {state} · {m.excerpt}"])
                child.setData(0, TARGET, ("message", m.id))
                child.setToolTip(0, fmt.plain_tooltip(m.excerpt))
                top.addChild(child)
            self.tree.addTopLevelItem(top)
            top.setExpanded(True)
        self.trace_shown.emit(result)

    def _lifeline_item(self, life: Lifeline) -> QTreeWidgetItem:
        priority = f"[{Priority(life.first.priority).label}]" if life.first.priority else ""
        fate = f"dropped in gen {life.dropped_in}" if life.dropped_in is not None else "kept"
        item = QTreeWidgetItem([f"{priority} {fate} · {_line(life.text)}".strip()])
        item.setToolTip(0, fmt.plain_tooltip(life.text))
        first = life.first
        item.setData(0, TARGET, ("generation", first.record_id, first.line_number or 0, "new"))
        cycle = f", cycle {life.cycle_id}" if life.cycle_id else ""
        sources = QTreeWidgetItem([f"Observed from {len(life.source_messages)} message(s) "
                                   f"({SOURCE_LABELS.get(life.source, life.source)}{cycle})"])
        for m in life.source_messages[:MAX_SOURCE_ROWS]:
            child = QTreeWidgetItem([f"{m.role} · {fmt.local_time(m.created_at)} · {m.excerpt}"])
            child.setData(0, TARGET, ("message", m.id))
            sources.addChild(child)
        if len(life.source_messages) > MAX_SOURCE_ROWS:
            sources.addChild(QTreeWidgetItem([f"… and {len(life.source_messages) - MAX_SOURCE_ROWS:,} more "
                                              f"(memory-studio trace --json lists them all)"]))
        item.addChild(sources)
        previous = None
        for step in life.steps:
            child = QTreeWidgetItem([step_text(step, previous)])
            if step.kind == "dropped" and previous is not None:
                child.setData(0, TARGET, ("generation", step.record_id, previous.line_number or 0, "old"))
            else:
                child.setData(0, TARGET, ("generation", step.record_id, step.line_number or 0, "new"))
            child.setToolTip(0, fmt.plain_tooltip(step_text(step, previous)))
            item.addChild(child)
            previous = step
        return item

    def _on_tree_item_clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        target = item.data(0, TARGET)
        if not target:
            return
        if target[0] == "message":
            self.message_requested.emit(target[1])
        else:
            self.generation_requested.emit(target[1], int(target[2]), target[3])
