"""The Overview window: every thread of the database as a point by its two OM ratios, coloured by state.

x = pending message tokens / observation threshold, y = observation tokens / reflection threshold
(Mastra's getStatus figures, batched by `studio.app.statuses`), computed on the TaskRunner
in short batches (the helper process for big databases) so the GUI thread never waits; points
appear as batches arrive. Hover a point for its figures, click it to open the thread.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSizeF, Qt, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QHBoxLayout,
    QMainWindow,
    QProgressBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.app import text as fmt
from studio.app.helper_process import CANCEL
from studio.app.statuses import StatusBatch, StatusRound, status_batch
from studio.app.uncountable import UNCOUNTABLE_MARK
from studio.engine.status import ThreadStatus
from studio.store.records import Thread
from studio.ui.gc_collector import WeakMethod, ensure_gui_thread_gc
from studio.ui.style import FILL, NEAR_RATIO, STYLE_SHEET
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.chart_export import ChartExport
from studio.ui.widgets.common import plain_label

#: States, most urgent first: (label, colour, symbol). The threshold states use the threshold bars' colours
#: (style.FILL: red at or over, yellow near, blue below); the two "should" states differ by their shape.
STATES = {
    "both": ("Over both thresholds", "#7f1d1d", "star"),
    "observe": ("Should observe", FILL["over"].name(), "t2"),
    "reflect": ("Should reflect", FILL["over"].name(), "t1"),
    "near": ("Near a threshold", FILL["near"].name(), "o"),
    "buffered": ("Buffered chunks waiting", "#7c3aed", "d"),
    "busy": ("Busy flag set", "#0f766e", "s"),
    "ok": ("Below both", FILL["ok"].name(), "o"),
}
#: Ratios beyond this are drawn at the edge (ringed) so the rest stays readable.
CLIP = 2.5
#: Up to this many threads, each point is labelled with its title.
LABEL_LIMIT = 40


def thread_state(status: ThreadStatus) -> str:
    """Return the state key of a thread's status (see STATES), most urgent first."""
    observe, reflect = status.should_observe, status.should_reflect
    if observe and reflect:
        return "both"
    if observe:
        return "observe"
    if reflect:
        return "reflect"
    if status.message_ratio >= NEAR_RATIO or status.observation_ratio >= NEAR_RATIO:
        return "near"
    if status.buffered_chunk_count:
        return "buffered"
    if any(f.set and not f.stale for f in status.flags):
        return "busy"
    return "ok"


@dataclass
class OverviewEntry:
    """One thread's point: its ratios (1.0 = at the threshold), state and status."""

    thread: Thread
    status: ThreadStatus
    state: str

    @property
    def x(self) -> float:
        return self.status.message_ratio

    @property
    def y(self) -> float:
        return self.status.observation_ratio


def entry_text(entry: OverviewEntry) -> str:
    """Return a point's tooltip text (plain text)."""
    s, t = entry.status, entry.thread
    return "\n".join([
        t.title or t.id, f"thread {t.id} · resource {t.resource_id}", STATES[entry.state][0],
        f"Messages before observation: {fmt.tokens(s.pending_tokens)} / {fmt.tokens(s.threshold)} "
        f"({s.message_ratio:.0%})",
        f"Observations before reflection: {fmt.tokens(s.observation_token_count)} / "
        f"{fmt.tokens(s.reflection_threshold)} ({s.observation_ratio:.0%})",
        f"{s.scope} scope · generation {s.generation_count}"
        + (f" · {s.buffered_chunk_count} buffered chunk{'s' if s.buffered_chunk_count != 1 else ''}"
           if s.buffered_chunk_count else ""),
        "Click to open the thread"])


class OverviewWindow(QMainWindow):
    """Every OM thread of the open database by its two ratios; click a point to open it.

    Its `exporter` runs the Export menu (the chart as PNG or SVG, the threads as CSV).
    """

    thread_requested = Signal(str)   # thread id clicked
    loaded = Signal()                # every status is in

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        ensure_gui_thread_gc()
        self.setWindowFlag(Qt.WindowType.Window, True)
        self.setWindowTitle("Overview — Memory Studio")
        self.setStyleSheet(STYLE_SHEET)
        self._runner = runner
        self._statuses = StatusRound()   # the threads whose points are still computed (studio.app.statuses)
        self._by_id: dict[str, Thread] = {}
        self._round = 0
        self._use_helper = False
        self._without_om = 0
        self.entries: list[OverviewEntry] = []
        self.uncountable: dict[str, str] = {}   # thread id -> why Mastra cannot count it (no point drawn)
        self.finished = False

        self.plot = pg.PlotWidget(background="w")
        item = self.plot.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setLabel("bottom", "Messages before observation (pending / threshold)")
        item.setLabel("left", "Observations before reflection (log / threshold)")
        item.setXRange(-0.05, CLIP * 1.04, padding=0)
        item.setYRange(-0.05, CLIP * 1.04, padding=0)
        item.getViewBox().setLimits(xMin=-0.2, yMin=-0.2, xMax=CLIP + 0.5, yMax=CLIP + 0.5)
        for orientation in ("vertical", "horizontal"):  # the over-threshold bands
            band = pg.LinearRegionItem(values=(1.0, CLIP + 0.5), orientation=orientation, movable=False,
                                       brush=pg.mkBrush(220, 38, 38, 18), pen=pg.mkPen(None))
            band.setZValue(-10)
            item.addItem(band)
        for angle in (90, 0):
            item.addItem(pg.InfiniteLine(pos=1.0, angle=angle, movable=False,
                                         pen=pg.mkPen("#dc2626", width=1, style=Qt.PenStyle.DashLine)))
        self.labels: list[pg.TextItem] = []
        # The legend has its own cell right of the plot area (not a corner of it): it covers no point,
        # whatever the ratios, and goes into the exported chart with the plot.
        self.legend = pg.LegendItem(labelTextSize="8pt", frame=False)
        item.layout.addItem(self.legend, 2, 3)
        item.layout.setAlignment(self.legend, Qt.AlignmentFlag.AlignTop)
        item.layout.setColumnSpacing(2, 8)   # a gap between the plot area (and its hidden right axis) and the legend
        self.scatters: dict[str, pg.ScatterPlotItem] = {}
        for key, (label, colour, symbol) in STATES.items():
            big = symbol != "o"   # triangles, stars and diamonds read smaller than a disc of the same size
            scatter = pg.ScatterPlotItem(size=12 if big else 9, symbol=symbol, pen=pg.mkPen("#ffffff", width=0.6),
                                         brush=pg.mkBrush(colour), hoverable=True, tip=WeakMethod(self, "_tip"),
                                         hoverSize=15 if big else 13, name=label)
            scatter.sigClicked.connect(self._on_scatter_clicked)
            item.addItem(scatter)
            self.scatters[key] = scatter
        # Threads beyond CLIP× are drawn at the edge, ringed.
        self.clipped = pg.ScatterPlotItem(size=15, symbol="o", pen=pg.mkPen("#111827", width=1.2), brush=None)
        item.addItem(self.clipped)
        self.counts: dict[str, int] = {}

        self.summary = plain_label("", "muted", wrap=True)
        self.uncountable_label = plain_label("", "muted", wrap=True)   # the ⚠ threads (no ratio to draw)
        self.uncountable_label.hide()
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        self.progress.setFormat("Statuses %v / %m")
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.exporter = ChartExport(self.plot, self, title="Memory Studio overview", write_csv=self._write_csv,
                                    default_name=_export_default_name, report=self._export_report)
        self.export_button.setMenu(self.exporter.menu(self.export_button, "Threads as CSV…"))
        bar = QHBoxLayout()
        bar.addWidget(self.summary, 1)
        bar.addWidget(self.progress)
        bar.addWidget(self.export_button)
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(self.plot, 1)
        layout.addWidget(self.uncountable_label)
        layout.addLayout(bar)
        self.setCentralWidget(central)
        self.resize(900, 700)
        self.database: str | None = None
        for keys in (QKeySequence(Qt.Key.Key_Escape), QKeySequence.StandardKey.Close):
            QShortcut(keys, self, activated=self.close)

    # -- loading -------------------------------------------------------------------------------

    def load(self, threads: list[Thread], *, use_helper: bool = False, without_om: int = 0,
             database: str | None = None) -> None:
        """Compute THREADS' statuses in background batches and draw them as they come.

        WITHOUT_OM counts the database's threads no OM record governs (named in the summary).
        """
        self._round += 1
        self._runner.cancel("overview-statuses")
        self._statuses, self._use_helper = StatusRound(threads), use_helper
        self._by_id = {t.id: t for t in self._statuses.threads}
        self._without_om = without_om
        self.entries, self.finished = [], False
        self.uncountable = {}
        self.uncountable_label.hide()
        self.database = database
        self.setWindowTitle(f"Overview — {database}" if database else "Overview — Memory Studio")
        for scatter in self.scatters.values():
            scatter.clear()
        self.clipped.clear()
        self.counts = {}
        self.legend.clear()
        self.progress.setRange(0, max(1, self._statuses.total))
        self.progress.setValue(0)
        self.progress.setVisible(bool(self._statuses.total))
        self._update_summary()
        if not self._statuses.total:
            self._finish()
            return
        self._next_batch(self._round)

    def _next_batch(self, round_: int) -> None:
        self._runner.submit_call(status_batch, self._statuses.next_threads(self._use_helper), CANCEL,
                                 helper=self._use_helper, key="overview-statuses",
                                 on_done=functools.partial(self._on_batch_done, round_),
                                 on_error=functools.partial(self._on_batch_failed, round_))

    def _on_batch_done(self, round_: int, batch: StatusBatch) -> None:
        if round_ != self._round:
            return
        finished = self._statuses.take(batch)
        first = len(self.entries)
        for status in batch.statuses:
            thread = self._by_id.get(status.thread_id)
            if thread is not None:
                self.entries.append(OverviewEntry(thread, status, thread_state(status)))
        if batch.uncountable:
            self.uncountable.update(batch.uncountable)
            self._show_uncountable()
        self.progress.setValue(self._statuses.done)
        self._draw(first)
        if finished:
            self._finish()
        else:
            self._next_batch(round_)

    def _show_uncountable(self) -> None:
        """List the threads Mastra cannot count a pending message of (they have no point), each with why."""
        lines = []
        for thread_id, sentence in self.uncountable.items():
            thread = self._by_id.get(thread_id)
            title = f" “{fmt.preview(thread.title, 40)}”" if thread is not None and thread.title else ""
            lines.append(f"{UNCOUNTABLE_MARK} {thread_id}{title} (not drawn): {sentence}")
        self.uncountable_label.setText("\n".join(lines))
        self.uncountable_label.setToolTip(fmt.plain_tooltip("\n".join(lines)))
        self.uncountable_label.setVisible(bool(lines))
        self._update_summary()

    def _on_batch_failed(self, round_: int, exc: Exception) -> None:
        if round_ != self._round:
            return
        self.progress.hide()
        self.summary.setText(f"The statuses could not be computed: {exc}")

    def _finish(self) -> None:
        self.finished = True
        self.progress.hide()
        self._update_summary()
        self.loaded.emit()

    # -- drawing -------------------------------------------------------------------------------

    def _draw(self, first: int = 0) -> None:
        """Add the points of entries FIRST.. (per state, as arrays: cost grows with the new points only)."""
        groups: dict[str, tuple[list, list, list]] = {}
        clipped: tuple[list, list] = ([], [])
        for i in range(first, len(self.entries)):
            entry = self.entries[i]
            x, y = min(entry.x, CLIP), min(entry.y, CLIP)
            xs, ys, data = groups.setdefault(entry.state, ([], [], []))
            xs.append(x)
            ys.append(y)
            data.append(i)
            if entry.x > CLIP or entry.y > CLIP:
                clipped[0].append(x)
                clipped[1].append(y)
        for key, (xs, ys, data) in groups.items():
            self.scatters[key].addPoints(x=np.array(xs, dtype=float), y=np.array(ys, dtype=float),
                                         data=np.array(data, dtype=object))
            self.counts[key] = self.counts.get(key, 0) + len(xs)
        if clipped[0]:
            self.clipped.addPoints(x=np.array(clipped[0], dtype=float), y=np.array(clipped[1], dtype=float))
        if groups:
            self.legend.clear()
            for key in STATES:
                if self.counts.get(key):
                    self.legend.addItem(self.scatters[key], f"{STATES[key][0]} ({self.counts[key]:,})")
            self._place_legend()
        self._draw_labels()
        self._fit_range()
        self._update_summary()

    def _place_legend(self) -> None:
        """Size the legend's cell to its entries: LegendItem measures its rows, the plot's layout then keeps it."""
        legend = self.legend
        legend.setMinimumSize(0, 0)
        legend.setMaximumSize(QSizeF(1e6, 1e6))
        legend.updateSize()                      # sets the legend's geometry to its rows' width × height
        hint = legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize)   # its labels' own text widths
        size = QSizeF(max(legend.width(), hint.width()) + 8, max(legend.height(), hint.height()))
        legend.setMinimumSize(size)
        legend.setMaximumSize(size)
        self.plot.getPlotItem().layout.invalidate()

    def _fit_range(self) -> None:
        """Show both thresholds and every point (up to CLIP×), with a little room around."""
        top_x = max((min(e.x, CLIP) for e in self.entries), default=1.0)
        top_y = max((min(e.y, CLIP) for e in self.entries), default=1.0)
        item = self.plot.getPlotItem()
        item.setXRange(-0.05, max(1.25, top_x * 1.12), padding=0)
        item.setYRange(-0.05, max(1.25, top_y * 1.12), padding=0)

    def _draw_labels(self) -> None:
        """Name the threads beside their points when there are few (stored titles, drawn as plain text)."""
        item = self.plot.getPlotItem()
        for label in self.labels:
            item.removeItem(label)
        self.labels = []
        if len(self.entries) > LABEL_LIMIT:
            return
        for entry in self.entries:
            title = entry.thread.title or entry.thread.id
            label = pg.TextItem(fmt.preview(title, 28), color="#374151", anchor=(-0.08, 0.5))
            label.setPos(min(entry.x, CLIP), min(entry.y, CLIP))
            item.addItem(label)
            self.labels.append(label)

    def _update_summary(self) -> None:
        counts: dict[str, int] = {}
        for entry in self.entries:
            counts[entry.state] = counts.get(entry.state, 0) + 1
        parts = [f"{len(self.entries):,} thread{'s' if len(self.entries) != 1 else ''} with OM"]
        parts += [f"{n:,} {STATES[k][0].lower()}" for k, n in counts.items() if k != "ok" and n]
        if self.uncountable:
            parts.append(f"{UNCOUNTABLE_MARK} {len(self.uncountable):,} Mastra cannot count (not drawn)")
        if self._without_om:
            parts.append(f"{self._without_om:,} without OM (not drawn)")
        if not self.finished and self._statuses.total:
            parts.append("computing…")
        clipped = sum(1 for e in self.entries if e.x > CLIP or e.y > CLIP)
        if clipped:
            parts.append(f"{clipped:,} beyond {CLIP:g}× drawn at the edge, ringed")
        self.summary.setText(" · ".join(parts))

    def _tip(self, x: float, y: float, data: int) -> str:
        if not isinstance(data, int) or not 0 <= data < len(self.entries):
            return ""
        return fmt.plain_tooltip(entry_text(self.entries[data]))

    def _on_scatter_clicked(self, _item, spots, _ev=None) -> None:
        if len(spots):
            data = spots[0].data()
            if isinstance(data, int) and 0 <= data < len(self.entries):
                self.thread_requested.emit(self.entries[data].thread.id)

    # -- export --------------------------------------------------------------------------------

    def _write_csv(self, path: str) -> None:
        """Write one row per thread (ids, state, tokens, thresholds, ratios) as CSV to PATH."""
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(["thread_id", "resource_id", "title", "state", "pending_tokens", "threshold",
                             "observation_tokens", "reflection_threshold", "message_ratio", "observation_ratio"])
            for e in self.entries:
                s = e.status
                writer.writerow([e.thread.id, e.thread.resource_id, e.thread.title or "", e.state, s.pending_tokens,
                                 s.threshold, s.observation_token_count, s.reflection_threshold,
                                 f"{e.x:.4f}", f"{e.y:.4f}"])

    def _export_report(self, text: str) -> None:
        self.statusBar().showMessage(text, 10000)

    def keyPressEvent(self, event) -> None:
        # Esc and Ctrl+W close the window also when no shortcut fires (the window is not the active one).
        if event.key() == Qt.Key.Key_Escape or event.matches(QKeySequence.StandardKey.Close):
            self.close()
            return
        super().keyPressEvent(event)

    def closeEvent(self, event) -> None:
        self._round += 1
        self._runner.cancel("overview-statuses")
        super().closeEvent(event)


def _export_default_name(kind: str) -> str:
    """Return the file name the Overview's Export offers for KIND (png, svg or csv)."""
    return f"overview.{kind}"
