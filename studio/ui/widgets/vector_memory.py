"""Thread ▸ Vectors: the store's vector memory (semantic recall), what of this thread is embedded, and why a
message was recalled.

- the store's vector indexes (LibSQLVector tables: name, dimension and the embedders it implies, rows,
  metric);
- Memory's `semanticRecall` options, which are code, not data: asked here with Mastra's defaults and
  remembered per store;
- the thread's embedded messages (chunks, the embedded text); selecting one shows the stored vectors
  nearest to it ("similar messages", no embedder) and, for a user message, what semantic recall brought
  into that turn (its stored vector is the query the agent used);
- a query box: recall by meaning as Memory.recall does, through an OpenAI-compatible `/embeddings` model.

Every stored text is shown as plain text.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.semantic import (
    VectorMemoryInfo,
    embedder_mismatch,
    load_vector_memory,
    message_recall_view,
    recall_by_meaning,
)
from studio.app.vector_store import attach_vector_store
from studio.engine.semantic import DEFAULT_MESSAGE_RANGE, DEFAULT_TOP_K, SemanticConfig, chunk_text
from studio.store.target import strip_secrets
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

#: Memory's default lastMessages (the page semantic hits join).
DEFAULT_LAST_MESSAGES = 10
SIMILAR_COUNT = 8
OPTIONS_HELP = ("Memory's semanticRecall options are code in your app, not data in the store: set them as your "
                "app does (Mastra's defaults: topK 4, messageRange 1, scope resource, lastMessages 10). "
                "They are remembered for this store.")


def _short(text: str, limit: int = 160) -> str:
    one = " ".join(str(text or "").split())
    return one if len(one) <= limit else one[:limit - 1] + "…"


class VectorMemoryTab(QWidget):
    """Show the store's vector memory and a thread's embedded messages; recall by meaning.

    RUNNER reads (database worker) and calls the embedder (pool); SETTINGS remembers the options per store.
    """

    options_changed = Signal()   # the semanticRecall options shown changed (set, or restored for the store)

    def __init__(self, runner: TaskRunner, parent=None, *, settings: QSettings | None = None):
        super().__init__(parent)
        self._runner = runner
        self._settings = settings
        self._thread_id: str | None = None
        self.info: VectorMemoryInfo | None = None
        self.vector_store: str | None = None   # Memory's vector store when not the database (File ▸ Vector Store…)

        self.indexes_label = plain_label("", wrap=True)
        self.top_k = QSpinBox(minimum=1, maximum=999, value=DEFAULT_TOP_K)
        self.message_range = QSpinBox(minimum=0, maximum=999, value=DEFAULT_MESSAGE_RANGE)
        self.scope = QComboBox()
        self.scope.addItems(["resource", "thread"])
        self.last_messages = QSpinBox(minimum=0, maximum=9999, value=DEFAULT_LAST_MESSAGES)
        options = QGridLayout()   # two rows: the tab keeps a small minimum width (900 px windows, every tab)
        options.setContentsMargins(0, 0, 0, 0)
        for n, (label, widget) in enumerate((("topK", self.top_k), ("messageRange", self.message_range),
                                             ("scope", self.scope), ("lastMessages", self.last_messages))):
            caption = QLabel(label)
            caption.setTextFormat(Qt.TextFormat.PlainText)
            caption.setToolTip(OPTIONS_HELP)
            widget.setToolTip(OPTIONS_HELP)
            options.addWidget(caption, n // 2, (n % 2) * 2)
            options.addWidget(widget, n // 2, (n % 2) * 2 + 1)
        for widget, least in ((self.top_k, 44), (self.message_range, 44), (self.last_messages, 50), (self.scope, 70)):
            widget.setMinimumWidth(least)
        options_row = QHBoxLayout()
        options_row.addLayout(options)
        options_row.addStretch(1)
        for spin in (self.top_k, self.message_range, self.last_messages):
            spin.valueChanged.connect(self._on_options_changed)
        self.scope.currentTextChanged.connect(self._on_options_changed)

        self.embedded = QTreeWidget()
        self.embedded.setHeaderLabels(["Role", "Chunk", "Embedded text"])
        self.embedded.setRootIsDecorated(False)
        self.embedded.setUniformRowHeights(True)
        self.embedded.setWordWrap(False)
        self.embedded.currentItemChanged.connect(self._on_embedded_selected)
        self.results_heading = plain_label("Select an embedded message to see the messages nearest to it.",
                                           "muted", wrap=True)
        self.results = QTreeWidget()
        self.results.setHeaderLabels(["Score", "From", "Text"])
        self.results.setUniformRowHeights(True)
        self.results.setIndentation(12)
        self.results.setWordWrap(False)

        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.addWidget(plain_label("Embedded messages", "heading"))
        ll.addWidget(self.embedded, 1)
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        rl.addWidget(self.results_heading)
        rl.addWidget(self.results, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.setChildrenCollapsible(False)
        split.addWidget(left)
        split.addWidget(right)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([340, 660])

        self.query = QLineEdit()
        self.query.setPlaceholderText("Recall by meaning: what would the agent recall for this text?")
        self.query.returnPressed.connect(self.run_query)
        self.embedder = QLineEdit()
        self.embedder.setPlaceholderText("embedder, e.g. openai/text-embedding-3-small")
        self.embedder.setToolTip("The embedding model Memory uses (OpenAI-compatible /embeddings: openai/…, "
                                 "ollama/…, lmstudio/…, vllm/…, openai-compatible/… with a base URL); keys from "
                                 "the usual variables or the OS keyring")
        self.base_url = QLineEdit()
        self.base_url.setPlaceholderText("base URL (optional)")
        self.recall_button = QPushButton("Recall")
        self.recall_button.clicked.connect(self.run_query)
        for edit, least in ((self.query, 60), (self.embedder, 50), (self.base_url, 40)):
            edit.setMinimumWidth(least)   # the window's 900 px minimum holds with every tab
        query_row = QHBoxLayout()
        query_row.addWidget(self.query, 3)
        query_row.addWidget(self.embedder, 2)
        query_row.addWidget(self.base_url, 1)
        query_row.addWidget(self.recall_button)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(self.indexes_label)
        layout.addLayout(options_row)
        layout.addLayout(query_row)
        layout.addWidget(split, 1)

    # -- thread -------------------------------------------------------------------------------------

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID's vector memory (None: nothing), read in the background."""
        self._thread_id = thread_id
        self.info = None
        self.embedded.clear()
        self.results.clear()
        self.indexes_label.setText("Loading…" if thread_id else "")
        if thread_id is not None:
            self.refresh()

    def reload(self) -> None:
        """Show the thread afresh (the vector store changed): indexes, embedded messages, the newest user turn."""
        self.set_thread(self._thread_id)

    def _with_vectors(self, read):
        """Return a database-worker task running READ(store) with the vector store attached as now (None: the
        database's own vector tables)."""
        target = self.vector_store

        def run(store, _progress, _cancel):
            attach_vector_store(store, target)
            return read(store)
        return run

    def refresh(self) -> None:
        """Re-read the indexes and the thread's embedded messages."""
        thread_id = self._thread_id
        if thread_id is None:
            return
        self._runner.submit(self._with_vectors(lambda store: load_vector_memory(store, thread_id)),
                            on_done=lambda info: self._on_loaded(thread_id, info),
                            on_error=lambda exc: self._on_failed(thread_id, exc), key="vector-memory")

    def set_controls_enabled(self, enabled: bool) -> None:
        """Enable the recall options, the query, the embedder and Recall (off when there is no vector index)."""
        for widget in (self.top_k, self.message_range, self.scope, self.last_messages, self.query, self.embedder,
                       self.base_url, self.recall_button):
            widget.setEnabled(enabled)

    def _on_failed(self, thread_id: str, exc: Exception) -> None:
        if thread_id == self._thread_id:
            self.indexes_label.setText(f"The vector memory could not be read: {fmt.read_failure(exc)}")

    def _on_loaded(self, thread_id: str, info: VectorMemoryInfo) -> None:
        if thread_id != self._thread_id:
            return
        first = self.info is None
        self.info = info
        if first:
            before = self.config()
            self._restore_options(info.display)
            if self.config() != before:
                self.options_changed.emit()
        self.set_controls_enabled(bool(info.indexes))
        if not info.indexes:
            self.indexes_label.setText("This store has no vector index: Memory's semanticRecall never embedded a "
                                       "message here (or its vector store is another database), so there is "
                                       "nothing to recall by meaning and the options below are off.")
        else:
            lines = [f"{i['index_name']} · {i['dimension']} dimensions"
                     + (f" ({i['embedder_hint']})" if i["embedder_hint"] else "")
                     + f" · {i['count']:,} vectors · {i['metric']}" for i in info.indexes]
            attached = f"Attached vector store {strip_secrets(self.vector_store)} · " if self.vector_store else ""
            self.indexes_label.setText(attached + "Vector indexes: " + "; ".join(lines))
        self.embedded.clear()
        for row in info.embedded:
            chunk = f"{row['chunk'] + 1}/{row['chunks']}"
            item = QTreeWidgetItem([str(row["role"] or ""), chunk, _short(row["text"])])
            item.setData(0, Qt.ItemDataRole.UserRole, row["message_id"])
            item.setData(1, Qt.ItemDataRole.UserRole, row["role"])
            item.setToolTip(2, fmt.plain_tooltip(str(row["text"] or "")[:2000]))
            self.embedded.addTopLevelItem(item)
        if not info.embedded:
            self.results_heading.setText("No message of this thread is embedded." if info.indexes else "")
        if first:  # the newest user message: what its turn recalled
            users = [i for i in range(self.embedded.topLevelItemCount())
                     if self.embedded.topLevelItem(i).data(1, Qt.ItemDataRole.UserRole) == "user"]
            if users:
                self.embedded.setCurrentItem(self.embedded.topLevelItem(users[-1]))
        self.embedded.resizeColumnToContents(0)
        self.embedded.resizeColumnToContents(1)

    # -- options ------------------------------------------------------------------------------------

    def config(self) -> SemanticConfig:
        """The semanticRecall options shown."""
        return SemanticConfig(self.top_k.value(), self.message_range.value(), self.scope.currentText())

    def recall_options(self) -> tuple[SemanticConfig, int]:
        """The semanticRecall options and lastMessages shown."""
        return self.config(), self.last_messages.value()

    def _settings_key(self, display: str) -> str:
        return "semantic-recall/" + display.replace("/", "|")

    def _restore_options(self, display: str) -> None:
        if self._settings is None:
            return
        saved = self._settings.value(self._settings_key(display))
        if not isinstance(saved, str):
            return
        parts = saved.split(",")
        if len(parts) != 4 or not all(p.isdigit() for p in (parts[0], parts[1], parts[3])):
            return
        for spin, value in ((self.top_k, parts[0]), (self.message_range, parts[1]), (self.last_messages, parts[3])):
            spin.blockSignals(True)
            spin.setValue(int(value))
            spin.blockSignals(False)
        if parts[2] in ("resource", "thread"):
            self.scope.blockSignals(True)
            self.scope.setCurrentText(parts[2])
            self.scope.blockSignals(False)

    def _on_options_changed(self, *_args) -> None:
        if self._settings is not None and self.info is not None:
            self._settings.setValue(self._settings_key(self.info.display),
                                    f"{self.top_k.value()},{self.message_range.value()},{self.scope.currentText()},"
                                    f"{self.last_messages.value()}")
        self.options_changed.emit()
        item = self.embedded.currentItem()
        if item is not None:
            self._on_embedded_selected(item, None)

    # -- similar messages and the turn --------------------------------------------------------------

    def _on_embedded_selected(self, item: QTreeWidgetItem | None, _previous) -> None:
        info = self.info
        if item is None or info is None:
            return
        message_id = item.data(0, Qt.ItemDataRole.UserRole)
        config, last = self.config(), self.last_messages.value()
        where = ({"resource_id": info.resource_id} if config.scope == "resource" and info.resource_id
                 else {"thread_id": info.thread_id})
        self.results_heading.setText("Loading…")
        self._runner.submit(self._with_vectors(lambda store: message_recall_view(
                                store, message_id, config, last_messages=last, where=where,
                                similar_count=SIMILAR_COUNT)),
                            on_done=lambda view: self._show_selected(message_id, view),
                            on_error=self._on_results_failed, key="vector-similar")

    def _show_selected(self, message_id: str, view: dict) -> None:
        current = self.embedded.currentItem()
        if current is None or current.data(0, Qt.ItemDataRole.UserRole) != message_id:
            return
        self.results.clear()
        turn, texts = view["turn"], view["messages"]

        def row(score, i):
            m = texts.get(i) or {}
            return score, m.get("thread_id", ""), m.get("role", ""), m.get("text", "")

        if turn is not None:
            self._group(f"At this turn: vector hits (topK {self.top_k.value()}, the index before the turn)",
                        [(h["score"], h["thread_id"], (texts.get(h["message_id"]) or {}).get("role", ""), h["text"])
                         for h in turn["vector_hits"]])
            self._group("Added to this turn's messages (same thread, outside the last-messages window)",
                        [row(None, i) for i in turn["recalled_ids"]])
            self._group("Remembered from other threads (the system message)",
                        [row(None, i) for i in turn["other_thread_ids"]])
        self._group(f"Similar messages (nearest stored vectors, {self.scope.currentText()} scope, any time)",
                    [(h.score, h.thread_id, h.role, h.text) for h in view["similar"]])
        self.results.expandAll()
        self.results_heading.setText("What semantic recall finds from this message's stored vector (no embedder)."
                                     if turn is None else
                                     "What semantic recall brought into this user message's turn, and the messages "
                                     "nearest to it (from its stored vector: no embedder).")
        self._fit_results()

    def _group(self, title: str, rows) -> None:
        group = QTreeWidgetItem([title])
        self.results.addTopLevelItem(group)
        group.setFirstColumnSpanned(True)
        if not rows:
            group.addChild(QTreeWidgetItem(["", "", "(none)"]))
        for score, thread, role, text in rows:
            origin = " · ".join(str(x) for x in (thread, role) if x)
            child = QTreeWidgetItem(["" if score is None else f"{score:.4f}", origin, _short(text)])
            child.setToolTip(2, fmt.plain_tooltip(str(text or "")[:2000]))
            group.addChild(child)

    def _fit_results(self) -> None:
        for column in range(2):
            self.results.resizeColumnToContents(column)

    def _on_results_failed(self, exc: Exception) -> None:
        self.results.clear()
        self.results_heading.setText(f"Could not read the vectors: {fmt.read_failure(exc)}")

    # -- recall by meaning --------------------------------------------------------------------------

    def run_query(self) -> None:
        """Embed the query box's text with the embedder given and recall as Memory.recall would."""
        info = self.info
        text, model = self.query.text().strip(), self.embedder.text().strip()
        if info is None or not text:
            return
        if not model:
            self.results_heading.setText("Give the embedder that embedded these messages (provider/model).")
            return
        refused = embedder_mismatch(info.memory_indexes, model)
        if refused is not None:
            self.results_heading.setText(refused)
            return
        config, last, base = self.config(), self.last_messages.value(), self.base_url.text().strip() or None
        if config.scope == "resource" and not info.resource_id:
            self.results_heading.setText("This thread has no resource id: use scope thread.")
            return
        thread_id, resource_id = info.thread_id, info.resource_id

        def embed(_p, _cancel):
            from studio.llm import LLMClient

            return LLMClient.for_model(model, base_url=base).embed(chunk_text(text)).vectors

        def recall(vectors):
            self._runner.submit(
                self._with_vectors(lambda store: recall_by_meaning(store, thread_id, text, lambda _chunks: vectors,
                                                                   config, resource_id=resource_id,
                                                                   last_messages=last, model_id=model)),
                on_done=lambda doc: self._show_recall(text, doc), on_error=self._on_query_failed, key="vector-recall")

        self.results_heading.setText(f"Embedding with {model}…")
        self._runner.submit_pooled(embed, on_done=recall, on_error=self._on_query_failed, key="vector-embed")

    def _on_query_failed(self, exc: Exception) -> None:
        self.results_heading.setText(f"Recall by meaning failed: {fmt.read_failure(exc)}")

    def _show_recall(self, text: str, doc: dict) -> None:
        self.results.clear()
        self._group(f"Vector hits in {doc['index_name']} (Mastra's order)",
                    [(h["score"], h["thread_id"], "", h["text"]) for h in doc["vector_hits"]])
        self._group(f"Memory.recall's messages ({len(doc['message_ids'])}: the newest page and the hits' ranges)",
                    [(None, "", "", i) for i in doc["message_ids"]])
        self.results.expandAll()
        self.results_heading.setText(f"Recall by meaning: {_short(text, 80)}")
        self._fit_results()

