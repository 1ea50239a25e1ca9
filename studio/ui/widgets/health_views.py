"""Health views: the findings table model, a thread's Health tab, and the whole-database Health window.

Findings are the Memory doctor's (`studio.engine.doctor`), as JSON-shaped dicts; everything stored
in them is shown as plain text. Activating a finding (double-click or Enter) emits
`finding_activated(dict)`; the main window opens the thread, generation or message it names.
"""

from __future__ import annotations

import json

from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QMainWindow,
    QPlainTextEdit,
    QProgressBar,
    QSplitter,
    QStyle,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.common.wording import plural
from studio.ui.style import STYLE_SHEET
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import empty_state, plain_label, table_view

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_COLOURS = {"error": QColor("#dc2626"), "warning": QColor("#d97706"), "info": QColor("#6b7280")}
COLUMNS = ["Severity", "Check", "Thread", "Where", "Summary"]
#: Widths (px) of Severity, Check, Thread, Where; in a view narrower than NARROW_FINDINGS px (the thread
#: view on a 1024 px screen) Check and Where narrow (they elide, the detail below says all) for the Summary.
WIDE_WIDTHS, NARROW_WIDTHS = (64, 150, 100, 130), (56, 112, 100, 84)
NARROW_FINDINGS = 720
ALL_SEVERITIES = "All severities"


def summary_text(counts: dict) -> str:
    """Return "0 errors · 1 warning · 2 info" for COUNTS ({severity: findings}), each word in its number."""
    return f"{plural(counts['error'], 'error')} · {plural(counts['warning'], 'warning')} · {counts['info']:,} info"


def where_text(f: dict) -> str:
    """Return where a finding points: generation, message(s), or the record / resource."""
    parts = []
    if f.get("generation") is not None:
        parts.append(f"generation {f['generation']}")
    ids = f.get("message_ids") or []
    if ids:
        parts.append(f"message {ids[0]}" + (f" (+{len(ids) - 1})" if len(ids) > 1 else ""))
    if not parts and f.get("lookup_key"):
        parts.append(str(f["lookup_key"]))
    if not parts and f.get("resource_id"):
        parts.append(f"resource {f['resource_id']}")
    return ", ".join(parts) or "database"


def detail_text(f: dict) -> str:
    """Return a finding as plain text: summary, place, evidence (JSON), the Mastra report and the fix."""
    lines = [f"{f['severity'].upper()} · {f['check']}", "", str(f["summary"]), ""]
    for label, key in (("Thread", "thread_id"), ("Resource", "resource_id"), ("OM record", "record_id"),
                       ("Lookup key", "lookup_key"), ("Generation", "generation")):
        if f.get(key) is not None:
            lines.append(f"{label}: {f[key]}")
    if f.get("message_ids"):
        lines.append("Messages: " + ", ".join(map(str, f["message_ids"])))
    lines += ["", "What to do: " + str(f.get("fix") or ""), "Reported in: " + str(f.get("reference") or ""), "",
              "Evidence:", json.dumps(f.get("evidence") or {}, ensure_ascii=False, indent=2, default=str)]
    return "\n".join(lines)


class FindingsModel(QAbstractTableModel):
    """Findings (dicts), sorted by severity then check; an optional severity filter."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._all: list[dict] = []
        self._rows: list[dict] = []
        self._severity: str | None = None

    def set_findings(self, findings: list[dict]) -> None:
        """Replace every finding."""
        self._all = list(findings)
        self._refilter()

    def add_findings(self, findings: list[dict]) -> None:
        """Add FINDINGS (a batch of a running scan)."""
        if findings:
            self._all.extend(findings)
            self._refilter()

    def set_severity(self, severity: str | None) -> None:
        """Show only SEVERITY ("error" | "warning" | "info"), or every finding (None)."""
        self._severity = severity
        self._refilter()

    def finding(self, row: int) -> dict | None:
        """Return the finding shown at ROW, or None."""
        return self._rows[row] if 0 <= row < len(self._rows) else None

    def all_findings(self) -> list[dict]:
        """Return every finding (unfiltered)."""
        return list(self._all)

    def _refilter(self) -> None:
        self.beginResetModel()
        rows = [f for f in self._all if self._severity is None or f["severity"] == self._severity]
        rows.sort(key=lambda f: (SEVERITY_ORDER.get(f["severity"], 9), f["check"], f.get("thread_id") or "",
                                 f.get("generation") if f.get("generation") is not None else -1))
        self._rows = rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        f = self.finding(index.row())
        if f is None:
            return None
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            value = [f["severity"], f["check"], f.get("thread_id") or "—", where_text(f),
                     " ".join(str(f["summary"]).split())][col]
            return value
        if role == Qt.ItemDataRole.ForegroundRole and col == 0:
            return SEVERITY_COLOURS.get(f["severity"])
        if role == Qt.ItemDataRole.ToolTipRole:
            return fmt.plain_tooltip(detail_text(f))
        return None


class FindingsPane(QWidget):
    """A findings table with a severity filter above and the selected finding's details below."""

    finding_activated = Signal(object)   # the finding dict

    def __init__(self, parent=None, *, empty: str = "No findings."):
        super().__init__(parent)
        self.model = FindingsModel(self)
        self.severity_combo = QComboBox()
        self.severity_combo.addItems([ALL_SEVERITIES, "error", "warning", "info"])
        self.severity_combo.currentTextChanged.connect(self._on_severity_combo_changed)
        self.summary = plain_label("", "muted", selectable=False)
        self.view = table_view()
        self.view.setModel(self.model)
        self.view.horizontalHeader().setStretchLastSection(True)
        self._narrow: bool | None = None
        self._fit_columns(self.view.viewport().width())
        self.view.viewport().installEventFilter(self)
        self.view.activated.connect(self._on_view_activated)   # double-click or Enter
        self.view.selectionModel().currentRowChanged.connect(self._on_view_current_changed)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        self.detail.setPlaceholderText("Select a finding; double-click it to open what it names.")
        self.empty = empty_state(empty)
        self.empty.hide()
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.severity_combo)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.view)
        split.addWidget(self.detail)
        split.setSizes([300, 140])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addLayout(top)
        layout.addWidget(self.empty)
        layout.addWidget(split, 1)
        self._split = split


    def _fit_columns(self, available: int) -> None:
        """Give the Summary (what tells the rows apart) the room: narrower Check and Where columns in a narrow view."""
        narrow = 0 < available < NARROW_FINDINGS
        if narrow == self._narrow:
            return
        self._narrow = narrow
        header = self.view.horizontalHeader()
        for col, width in enumerate(NARROW_WIDTHS if narrow else WIDE_WIDTHS):
            header.resizeSection(col, max(width, self.header_width(col)))

    def header_width(self, col: int) -> int:
        """Return the width (px) column COL's header needs to show its title whole (text, margins, sort arrow)."""
        header = self.view.horizontalHeader()
        return header.fontMetrics().horizontalAdvance(COLUMNS[col]) + 2 * header.style().pixelMetric(
            QStyle.PixelMetric.PM_HeaderMargin) + header.style().pixelMetric(QStyle.PixelMetric.PM_HeaderMarkSize) + 8

    def eventFilter(self, watched, event) -> bool:
        if watched is self.view.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_columns(event.size().width())
        return super().eventFilter(watched, event)
    def set_findings(self, findings: list[dict]) -> None:
        """Show FINDINGS."""
        self.model.set_findings(findings)
        self._after_change()

    def add_findings(self, findings: list[dict]) -> None:
        """Add a batch of FINDINGS."""
        self.model.add_findings(findings)
        self._after_change()

    def counts(self) -> dict[str, int]:
        """Return {severity: number of findings} over every finding."""
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.model.all_findings():
            out[f["severity"]] = out.get(f["severity"], 0) + 1
        return out

    def _after_change(self) -> None:
        c = self.counts()
        self.summary.setText(summary_text(c))
        nothing = not self.model.all_findings()
        self.empty.setVisible(nothing)
        self._split.setVisible(not nothing)

    def _on_severity_combo_changed(self, text: str) -> None:
        self.model.set_severity(None if text == ALL_SEVERITIES else text)
        self.detail.clear()

    def _on_view_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        f = self.model.finding(current.row())
        self.detail.setPlainText(detail_text(f) if f else "")

    def _on_view_activated(self, index: QModelIndex) -> None:
        f = self.model.finding(index.row())
        if f is not None:
            self.finding_activated.emit(f)


def _thread_findings(store, thread_id: str, _progress, cancel) -> list[dict]:
    from studio.engine.doctor import run_doctor

    return run_doctor(store, thread_id, cancel=cancel).to_json()["findings"]


class HealthTab(QWidget):
    """Thread ▸ Health: the doctor's findings for the selected thread.

    The doctor runs on the database worker, only while the tab is shown (browsing other tabs
    costs nothing), once per thread until `refresh`.
    """

    finding_activated = Signal(object)

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        self._runner = runner
        self._thread_id: str | None = None
        self._checked: str | None = None
        self.pane = FindingsPane(empty="No findings for this thread: nothing Mastra's known failures leave behind.")
        self.pane.view.setColumnHidden(COLUMNS.index("Thread"), True)   # always this thread
        self.pane.finding_activated.connect(self.finding_activated)
        self.status = plain_label("", "muted", wrap=True, selectable=False)
        self.status.setContentsMargins(8, 6, 8, 6)   # aligned with the pane's counts
        self.status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.status.hide()   # shown only while it has something to say: an empty label is an empty band
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.status)
        layout.addWidget(self.pane, 1)

    def _say(self, text: str) -> None:
        """Show TEXT (checking, or why the check failed) instead of the findings; TEXT empty: the findings alone.

        While the thread is checked, or when the check failed, the pane would say "No findings" (and
        0 errors · 0 warnings): it is hidden then.
        """
        self.status.setText(text)
        self.status.setVisible(bool(text))
        self.pane.setVisible(not text)

    @property
    def thread_id(self) -> str | None:
        """Return the thread shown, or None."""
        return self._thread_id

    def set_thread(self, thread_id: str | None) -> None:
        """Show THREAD_ID (None: clear); it is checked when the tab is shown."""
        self._thread_id, self._checked = thread_id, None
        self.pane.set_findings([])
        self._say("")
        if thread_id is None:
            self._runner.cancel("health-thread")
        elif self.isVisible():
            self._check()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._thread_id is not None and self._checked != self._thread_id:
            self._check()

    def _check(self) -> None:
        thread_id = self._thread_id
        self._checked = thread_id
        self._say("Checking this thread…")
        self._runner.submit(lambda store, p, c: _thread_findings(store, thread_id, p, c),
                            on_done=lambda found: self._on_findings(thread_id, found),
                            on_error=lambda exc: self._on_failed(thread_id, exc), key="health-thread")

    def refresh(self) -> None:
        """Check the thread shown again."""
        self.set_thread(self._thread_id)

    def _on_findings(self, thread_id: str, findings: list[dict]) -> None:
        if thread_id != self._thread_id:
            return
        self._say("")
        self.pane.set_findings(findings)

    def _on_failed(self, thread_id: str, exc: Exception) -> None:
        if thread_id == self._thread_id:
            self._say(f"The check failed: {fmt.read_failure(exc)}")


class HealthWindow(QMainWindow):
    """View ▸ Health: every finding of the database, filled in as the background scan's batches land."""

    finding_activated = Signal(object)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Health — Memory Studio")
        self.setStyleSheet(STYLE_SHEET)
        self.pane = FindingsPane(empty="No findings yet.")
        self.pane.finding_activated.connect(self.finding_activated)
        self.heading = plain_label("Health", "heading", selectable=False)
        self.progress = QProgressBar()
        self.progress.setFormat("Checked %v / %m threads")
        self.progress.setMaximumHeight(16)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(8, 8, 8, 8)
        head = QHBoxLayout()
        head.addWidget(self.heading, 1)
        head.addWidget(self.progress)
        layout.addLayout(head)
        layout.addWidget(self.pane, 1)
        self.setCentralWidget(central)
        QShortcut(QKeySequence(QKeySequence.StandardKey.Close), self, self.close)
        self.resize(900, 560)

    def set_database(self, path: str | None) -> None:
        """Start over for the database at PATH."""
        self.heading.setText(f"Health of {path}" if path else "Health")
        self.heading.setToolTip(fmt.plain_tooltip(path or ""))
        self.pane.set_findings([])
        self.progress.setRange(0, 0)
        self.progress.show()

    def set_progress(self, done: int, total: int) -> None:
        """Show DONE of TOTAL threads checked (hidden once complete)."""
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setVisible(done < total)
