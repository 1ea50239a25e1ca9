"""The turn context view: what Observational Memory put into the model's context at turn N of the thread.

A turn box (a Timeline point clicked selects the turn in progress at its time), a summary (generation, Observer
outputs written, buffered chunks activated / waiting), a table of each section's tokens (Mastra's
estimate and the exact o200k count), and the sections themselves: the observation block, the
unobserved messages in the window, working memory; "What the model saw" lists the model view (each
part as Mastra rendered it, its tokens and the rows it came from); "Semantic recall" says what the turn's
user message's stored vector recalled (`studio.engine.recall_view.recall_report`; the options are the
Vectors tab's). Stored text is shown as plain text.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.trace import load_history_context, load_turn_context
from studio.engine.context import TurnContext, after_turn_lines
from studio.engine.model_view import view_rows, view_text
from studio.engine.recall_view import recall_report
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

#: Said above a thread's turns when no OM record governs it: the model got its message history.
NO_OM_TEXT = ("No Observational Memory record governs this thread: at every turn the model got the thread's "
              "message history, as the agent's lastMessages (code: set it here, remembered for this database) "
              "and a token budget (its boundary is stored on the thread) selected it.")
#: The settings key of a database's lastMessages (secrets stripped from server addresses).
LAST_MESSAGES_KEY = "context/lastMessages/{}"
SECTION_ROWS = ["Observation block", "Unobserved messages", "Working memory", "Total"]
WINDOW_COLUMNS = ["Role", "Time", "Mastra estimate", "Exact o200k", "Note"]
MODEL_COLUMNS = ["Part", "Mastra estimate", "Exact o200k", "From"]


def _read_only_text() -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setReadOnly(True)
    view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
    return view


def _cell(text: str, right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
    if right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


class TurnContextView(QWidget):
    """Show the context of one turn of the thread (loaded in the background)."""

    context_shown = Signal(object)   # the TurnContext now shown
    message_requested = Signal(str)  # a window message was activated

    def __init__(self, runner: TaskRunner, parent=None, *, settings: QSettings | None = None):
        super().__init__(parent)
        self._runner = runner
        self._settings = settings
        self.database_path: str | None = None   # the settings' key for lastMessages (no secret in it)
        self._thread_id: str | None = None
        self._wanted: int | None = None
        self._pending = False
        self._record_present: bool | None = None   # unknown until the thread's detail has loaded
        self.use_helper = False
        self.semantic_options = None   # () -> SemanticConfig: Memory's semanticRecall options (the Vectors tab's)
        self.vector_store: str | None = None   # Memory's vector store when not the database (File ▸ Vector Store…)
        self.context: TurnContext | None = None
        self.turn_box = QSpinBox()
        self.turn_box.setRange(1, 1)
        self.turn_box.setPrefix("Turn ")
        self.turn_box.setKeyboardTracking(False)
        self.turn_box.valueChanged.connect(self._on_turn_box_value_changed)
        self.last_button = QPushButton("Last turn")
        self.last_button.clicked.connect(lambda: self.show_turn(None))
        # lastMessages is the agent's code, not data: asked here for threads without OM, kept per database.
        self.last_messages_box = QSpinBox()
        self.last_messages_box.setRange(-1, 100_000)
        self.last_messages_box.setSpecialValueText("lastMessages: not set")
        self.last_messages_box.setMaximumWidth(200)
        self.last_messages_box.setPrefix("lastMessages: ")
        self.last_messages_box.setValue(-1)
        self.last_messages_box.setKeyboardTracking(False)
        self.last_messages_box.setToolTip("The agent's lastMessages (0: no history). Code, not data: the studio "
                                          "cannot read it from the database, so it asks, and remembers it "
                                          "per database.")
        self.last_messages_box.valueChanged.connect(self._on_last_messages_box_value_changed)
        self.last_messages_box.hide()
        row = QHBoxLayout()
        row.addWidget(self.turn_box)
        row.addWidget(self.last_button)
        row.addWidget(self.last_messages_box)
        self.summary = plain_label("", "muted", wrap=True)
        row.addWidget(self.summary, 1)

        self.sections = QTableWidget(len(SECTION_ROWS), 2)
        self.sections.setHorizontalHeaderLabels(["Mastra estimate", "Exact o200k"])
        self.sections.setVerticalHeaderLabels(SECTION_ROWS)
        self.sections.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.sections.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.sections.setMaximumHeight(self.sections.verticalHeader().defaultSectionSize() * 5 + 8)

        # What the window figure is (the turn's start) and the window after the turn: for the last turn
        # Mastra's getStatus pending tokens, the Observational memory tab's figure.
        self.after_turn = plain_label("", "muted", wrap=True)

        self.observations = _read_only_text()
        self.window_table = QTableWidget(0, len(WINDOW_COLUMNS))
        self.window_table.setHorizontalHeaderLabels(WINDOW_COLUMNS)
        self.window_table.horizontalHeader().setStretchLastSection(True)
        self.window_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.window_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.window_table.cellActivated.connect(self._on_window_table_cell_activated)
        self.working_memory = _read_only_text()
        self.parts = QTabWidget()
        self.parts.setDocumentMode(True)
        # What the model was given, in Mastra's rendering and order: each part, its tokens, its rows.
        self.model_table = QTableWidget(0, len(MODEL_COLUMNS))
        self.model_table.setHorizontalHeaderLabels(MODEL_COLUMNS)
        self.model_table.horizontalHeader().setStretchLastSection(True)
        self.model_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.model_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.model_table.setWordWrap(False)
        self.model_table.verticalHeader().hide()
        self.model_text = _read_only_text()
        model = QSplitter(Qt.Orientation.Vertical)
        model.setChildrenCollapsible(False)
        for part in (self.model_table, self.model_text):  # small windows (640×420) must not grow for them
            part.setMinimumHeight(24)
            model.addWidget(part)
        model.setStretchFactor(0, 3)  # the parts list (working memory first) taller than the text below it
        model.setStretchFactor(1, 2)
        # short names: all five must show whole at 1024×700 (tests/ui/test_newcomer_ui.py); tooltips say more
        self.recall_text = _read_only_text()   # plain text: stored messages are never markup
        for widget, name, tip in (
                (model, "What the model saw", "Every part of the turn's context, in the order the model got it"),
                (self.observations, "Observations", "The observation block as the model saw it"),
                (self.window_table, "Unobserved", "The unobserved messages in the turn's message window"),
                (self.working_memory, "Working memory", "The working memory given to the model at this turn"),
                (self.recall_text, "Recall", "What semantic recall added at this turn, and why")):
            self.parts.setTabToolTip(self.parts.addTab(widget, name), tip)

        self.om_parts = [self.observations, self.window_table, self.working_memory]
        split = QSplitter(Qt.Orientation.Vertical)
        split.setChildrenCollapsible(False)
        split.addWidget(self.sections)
        split.addWidget(self.parts)
        split.setStretchFactor(1, 1)
        # everything above is one page; a thread without an OM record shows its history part only
        self.page = QWidget()
        page = QVBoxLayout(self.page)
        page.setContentsMargins(0, 0, 0, 0)
        page.addLayout(row)
        page.addWidget(self.after_turn)
        page.addWidget(split, 1)
        self.no_record = plain_label(NO_OM_TEXT, "muted", wrap=True)
        self.no_record.hide()
        page.insertWidget(1, self.no_record)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(self.page, 1)

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's last turn once `set_record_present` says it has an OM record (None: empty)."""
        if thread_id == self._thread_id:
            return
        self._thread_id = thread_id
        self._record_present = None
        self.context = None
        self._show_page(True)
        self.turn_box.blockSignals(True)
        self.turn_box.setSuffix("")      # "of N" once the thread's turns are counted
        self.turn_box.setRange(1, 1)
        self.turn_box.blockSignals(False)
        for r in range(len(SECTION_ROWS)):
            for c in range(2):
                self.sections.setItem(r, c, _cell(""))
        self.summary.setText("" if thread_id else "No thread selected.")
        self.after_turn.setText("")
        self.observations.setPlainText("")
        self.working_memory.setPlainText("")
        self.window_table.setRowCount(0)
        self.model_table.setRowCount(0)
        self.model_text.setPlainText("")
        self.recall_text.setPlainText("")
        self._pending = thread_id is not None

    def set_record_present(self, present: bool) -> None:
        """Say whether the shown thread has an OM record; without one there is no OM context to rebuild."""
        if self._thread_id is None:
            return
        self._record_present = present
        self._show_page(present)
        if not present:
            self.after_turn.setText("")
            self.last_messages_box.blockSignals(True)
            self.last_messages_box.setValue(self._stored_last_messages())
            self.last_messages_box.blockSignals(False)
        if self._pending and self.isVisible():
            self._pending = False
            self.show_turn(None)

    def _show_page(self, om: bool) -> None:
        """Show the OM parts (OM True) or, for a thread without an OM record, its message history only."""
        self.sections.setVisible(om)
        self.after_turn.setVisible(om)
        self.no_record.setVisible(not om)
        self.last_messages_box.setVisible(not om)
        for widget in self.om_parts:
            self.parts.setTabVisible(self.parts.indexOf(widget), om)

    def _stored_last_messages(self) -> int:
        if self._settings is None or not self.database_path:
            return -1
        try:
            return int(self._settings.value(LAST_MESSAGES_KEY.format(self.database_path), -1))
        except (TypeError, ValueError):
            return -1

    def _on_last_messages_box_value_changed(self, value: int) -> None:
        if self._settings is not None and self.database_path:
            self._settings.setValue(LAST_MESSAGES_KEY.format(self.database_path), value)
        if self._record_present is False:
            self.show_turn(self.context.turn if self.context is not None else None)

    def showEvent(self, event) -> None:
        super().showEvent(event)
        # reconstructing needs the thread's timeline: only when looked at, and once the record is known
        if self._pending and self._record_present is not None:
            self._pending = False
            self.show_turn(None)

    def show_time(self, at_ms) -> None:
        """Load and show the thread's turn in progress at AT_MS (epoch ms; a Timeline point's time)."""
        self.show_turn(None, at_ms=at_ms if isinstance(at_ms, int) else None)

    def show_turn(self, turn: int | None, at_ms: int | None = None) -> None:
        """Load and show turn TURN (1-based; None: the turn at AT_MS, else the last turn) of the thread."""
        if self._thread_id is None:
            return
        self._pending = False
        self._wanted = turn
        self.summary.setText("Reconstructing the context…")
        semantic = self.semantic_options() if self.semantic_options is not None else None
        if self._record_present is False:
            value = self.last_messages_box.value()
            self._runner.submit_call(load_history_context, self._thread_id, turn, None if value < 0 else value,
                                     semantic, self.vector_store, helper=self.use_helper, on_done=self._on_history_done,
                                     on_error=self._on_context_failed, key="turn-context")
            return
        self._runner.submit_call(load_turn_context, self._thread_id, turn, at_ms, semantic, self.vector_store,
                                 helper=self.use_helper, on_done=self._on_context_done,
                                 on_error=self._on_context_failed, key="turn-context")

    def refresh_recall(self) -> None:
        """Show the shown turn again: the semanticRecall options changed."""
        if self.context is not None:
            self.show_turn(self.context.turn)

    def _on_turn_box_value_changed(self, value: int) -> None:
        if self.context is None or value != self.context.turn:
            self.show_turn(value)

    def _on_context_failed(self, exc: Exception) -> None:
        self.context = None
        self.after_turn.setText("")
        self.summary.setText(f"No context to show: {fmt.read_failure(exc)}")

    def _on_context_done(self, ctx: TurnContext) -> None:
        if ctx.thread_id != self._thread_id:
            return
        self.context = ctx
        self._set_turn_box(ctx.turn, ctx.turns)
        chunks = ""
        if ctx.activated_chunks or ctx.pending_chunks:
            chunks = (f" · {len(ctx.activated_chunks)} buffered chunk(s) activated so far, "
                      f"{len(ctx.pending_chunks)} waiting")
        note = " · reconstructed (resource scope)" if ctx.scope == "resource" else ""
        self.summary.setText(
            f"From {fmt.local_time(ctx.at)}: generation {ctx.generation}, {ctx.segments_shown} of "
            f"{ctx.segments_total} observer output(s) written{chunks}{note}")
        rows = [(ctx.observations.estimate, ctx.observations.exact), (ctx.window_estimate, ctx.window_exact),
                (ctx.working_memory.estimate, ctx.working_memory.exact), (ctx.total_estimate, ctx.total_exact)]
        for r, (estimate, exact) in enumerate(rows):
            self.sections.setItem(r, 0, _cell(fmt.tokens(estimate), right=True))
            self.sections.setItem(r, 1, _cell(fmt.tokens(exact), right=True))
        self.after_turn.setText("\n".join(after_turn_lines(ctx.to_json())))
        extra = []
        if ctx.current_task:
            extra.append(f"\n\n[current task]\n{ctx.current_task}")
        if ctx.suggested_response:
            extra.append(f"\n\n[suggested response]\n{ctx.suggested_response}")
        self.observations.setPlainText((ctx.observations.text or "(no observations yet)") + "".join(extra))
        wm = ctx.working_memory.text
        self.working_memory.setPlainText(f"({ctx.working_memory_scope}-scoped, as stored now: Mastra keeps no "
                                         f"history of working memory)\n\n{wm}" if wm else "(no working memory stored)")
        self.window_table.setRowCount(len(ctx.window))
        for r, w in enumerate(ctx.window):
            note = "this turn's prompt: observed, kept in context" if w.in_flight else ""
            for c, (text, right) in enumerate(((w.role, False), (fmt.local_time(w.created_at, seconds=True), False),
                                               (fmt.tokens(w.estimate), True), (fmt.tokens(w.exact), True),
                                               (note, False))):
                item = _cell(text, right)
                if c == 0:
                    item.setData(Qt.ItemDataRole.UserRole, w.id)
                self.window_table.setItem(r, c, item)
        self.window_table.resizeColumnsToContents()
        self._show_model_view(ctx.model_view)
        self.context_shown.emit(ctx)

    def _on_history_done(self, ctx) -> None:
        """Show a thread without OM at one turn (a `HistoryContext`): its message history as the model got it."""
        if ctx.thread_id != self._thread_id:
            return
        self.context = ctx
        self._set_turn_box(ctx.turn, ctx.turns)
        limit = ctx.token_limit
        if limit is None:
            budget = "no token budget stored"
        else:
            budget = (f"token budget {limit['maxTokens']:,}; the replayed trim boundary "
                      f"{'equals' if ctx.boundary_matches else 'differs from'} the one stored")
        cap = "no count cap" if ctx.last_messages is None else f"{ctx.last_messages} last messages"
        if self.last_messages_box.value() < 0:
            cap += ", Mastra's default" if limit is None else " (a token budget replaces the default count)"
        self.summary.setText(f"From {fmt.local_time(ctx.at)}: message history only ({cap}, {budget})")
        self._show_model_view(ctx.model_view)

    def _set_turn_box(self, turn: int, turns: int) -> None:
        self.turn_box.blockSignals(True)
        self.turn_box.setRange(1, max(1, turns))
        self.turn_box.setSuffix(f" of {turns}")
        self.turn_box.setValue(turn)
        self.turn_box.blockSignals(False)

    def _show_model_view(self, view: dict) -> None:
        self.recall_text.setPlainText(recall_report(getattr(self.context, "semantic_recall", None), view))
        rows = view_rows(view)
        self.model_table.setRowCount(len(rows))
        for r, (part, estimate, exact, source) in enumerate(rows):
            for c, (text, right) in enumerate(((part, False), (fmt.tokens(estimate), True),
                                               (fmt.tokens(exact), True), (source, False))):
                item = _cell(text, right)
                item.setToolTip(source)
                self.model_table.setItem(r, c, item)
        self.model_table.resizeColumnsToContents()
        self.model_text.setPlainText(view_text(view))

    def _on_window_table_cell_activated(self, row: int, _column: int) -> None:
        item = self.window_table.item(row, 0)
        if item is not None and item.data(Qt.ItemDataRole.UserRole):
            self.message_requested.emit(item.data(Qt.ItemDataRole.UserRole))
