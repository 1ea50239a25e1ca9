"""View ▸ Search All Threads… (Ctrl+Shift+F): find messages across every thread by text and message metadata.

The search (`studio.app.search.iter_search`) runs on the database worker and sends its hits a few threads at a
time, so the first results show while the rest of the store is read; a new search or Cancel stops the running
one. Results are grouped by resource, then thread (newest conversations first), each message with its role,
time and a snippet, all plain text (the snippet of the stored text: `<turn>` tags included, as the Messages
tab's raw view shows it). Enter or a double-click opens the message in the Messages tab.
"""

from __future__ import annotations

import json

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.search import SearchHit, iter_search, parse_query
from studio.common.metadata_filter import ValidationError, parse_key_values
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import plain_label

#: The item data role holding (thread id, message id) of a message row.
HIT_ROLE = Qt.ItemDataRole.UserRole + 1


class SearchWindow(QDialog):
    """Search every thread of the open store; `message_activated(thread_id, message_id)` opens a result."""

    message_activated = Signal(str, str)

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Search All Threads")
        self._runner = runner
        self._task = None
        self.hits: list[SearchHit] = []
        self._resources: dict[str, QTreeWidgetItem] = {}
        self._threads: dict[str, QTreeWidgetItem] = {}
        self.query_edit = QLineEdit()
        self.query_edit.setPlaceholderText('Words and "phrases" in any thread (case and accents as Unicode folds them)')
        self.query_edit.setClearButtonEnabled(True)
        self.query_edit.returnPressed.connect(self.start)
        self.metadata_edit = QLineEdit()
        self.metadata_edit.setPlaceholderText("Message metadata: key=value, … (optional)")
        self.metadata_edit.setClearButtonEnabled(True)
        self.metadata_edit.returnPressed.connect(self.start)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.start)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        self.cancel_button.setEnabled(False)
        self.status = plain_label("Type words to find, then Enter.", "muted", wrap=True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Resource / thread / time", "Role", "Text"])
        self.tree.setUniformRowHeights(True)
        self.tree.itemActivated.connect(self._on_item_activated)
        header = self.tree.header()
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, self.fontMetrics().horizontalAdvance("2026-12-04 20:13:19") + 80)
        header.resizeSection(1, self.fontMetrics().horizontalAdvance("assistant") + 24)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self._on_escape)
        row = QHBoxLayout()
        row.addWidget(self.query_edit, 3)
        row.addWidget(self.metadata_edit, 2)
        row.addWidget(self.search_button)
        row.addWidget(self.cancel_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.status)
        layout.addWidget(self.tree, 1)
        self.resize(900, 560)

    @property
    def running(self) -> bool:
        """True while a search is reading the store."""
        return self._task is not None

    def start(self) -> None:
        """Search for the query typed (a running search is cancelled first)."""
        query = self.query_edit.text()
        metadata = None
        if self.metadata_edit.text().strip():
            try:
                metadata = parse_key_values(self.metadata_edit.text())
            except ValidationError as exc:
                self.status.setText(f"The metadata filter is not valid: {exc}")
                return
        if not parse_query(query) and not metadata:
            self.status.setText("Type words to find (or a metadata filter), then Enter.")
            return
        self.cancel()
        self._clear()
        self.status.setText("Searching…")
        self.cancel_button.setEnabled(True)

        def work(store, progress, cancel):
            for hits, done, total in iter_search(store, query, metadata=metadata, cancel=cancel):
                progress(done, total, hits)
            return cancel.is_set()

        self._task = self._runner.submit(work, on_done=self._on_done, on_error=self._on_failed,
                                         on_progress=self._on_progress, key="search-all", load=True)

    def cancel(self) -> None:
        """Stop the running search (the results found so far stay)."""
        if self._task is not None:
            self._runner.cancel("search-all")
            self._task = None
            self.cancel_button.setEnabled(False)
            self.status.setText(self._summary("Search cancelled"))

    def _clear(self) -> None:
        self.hits = []
        self._resources.clear()
        self._threads.clear()
        self.tree.clear()

    def _summary(self, head: str, done: int | None = None, total: int | None = None) -> str:
        n = len(self.hits)
        threads = len(self._threads)
        where = f" in {threads:,} thread{'s' if threads != 1 else ''}" if n else ""
        of = f" ({done:,} of {total:,} threads searched)" if done is not None and total is not None else ""
        return f"{head}: {n:,} message{'s' if n != 1 else ''}{where}{of}."

    def _on_progress(self, done: int, total: int, hits=None) -> None:
        for hit in hits or []:
            self._add(hit)
        self.status.setText(self._summary("Searching", done, total))

    def _add(self, hit: SearchHit) -> None:
        self.hits.append(hit)
        resource = self._resources.get(hit.resource_id)
        if resource is None:
            resource = self._resources[hit.resource_id] = QTreeWidgetItem(self.tree, [hit.resource_id])
            resource.setExpanded(True)
        thread = self._threads.get(hit.thread_id)
        if thread is None:
            thread = self._threads[hit.thread_id] = QTreeWidgetItem(resource, [hit.thread_title or hit.thread_id])
            thread.setToolTip(0, fmt.plain_tooltip(f"{hit.thread_title or '(no title)'}\nthread {hit.thread_id}"))
            thread.setExpanded(True)
        item = QTreeWidgetItem(thread, [fmt.local_time(hit.created_at, seconds=True), hit.role, hit.snippet])
        item.setData(0, HIT_ROLE, (hit.thread_id, hit.message_id))
        item.setToolTip(2, fmt.plain_tooltip(hit.snippet))

    def _on_done(self, cancelled: bool) -> None:
        self._task = None
        self.cancel_button.setEnabled(False)
        self.status.setText(self._summary("Search cancelled" if cancelled else "Done"))
        if not self.hits and not cancelled:
            self.status.setText("No message matches.")

    def _on_failed(self, exc: Exception) -> None:
        self._task = None
        self.cancel_button.setEnabled(False)
        self.status.setText(f"The search failed: {fmt.read_failure(exc)}")

    def _on_item_activated(self, item: QTreeWidgetItem, _column: int) -> None:
        where = item.data(0, HIT_ROLE)
        if where:
            self.message_activated.emit(*where)

    def _on_escape(self) -> None:
        if self.running:
            self.cancel()
        else:
            self.close()

    def closeEvent(self, event) -> None:
        self.cancel()
        super().closeEvent(event)

    def results_json(self) -> str:
        """The hits shown, as `search --json` prints them (tests, copy)."""
        return json.dumps([h.as_json() for h in self.hits], ensure_ascii=False)
