"""The Timeline tab: a thread's OM saw-tooth (message window, observation log, thresholds) with events.

The series come from `studio.engine.timeline.build_timeline`, read on the TaskRunner (the helper
process for big databases); the What-if panel beside the chart replays the thread with other
settings (`studio.engine.whatif.simulate`, on the runner's pool) and its series are drawn dashed
over the real ones. Zoom and pan with the mouse (pyqtgraph), a crosshair follows the pointer,
markers carry tooltips, and a click selects that message in Messages and that generation in
History. The chart exports to PNG and SVG, the series to CSV.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, QSize, Qt, Signal
from PySide6.QtGui import QAction, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFrame,
    QMenu,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from studio.engine.events import (
    ACTIVATION,
    BUFFERING,
    OBSERVATION,
    REFLECTION,
    REFLECTION_ACTIVATION,
    REFLECTION_BUFFERING,
    THREAD_UPDATE,
    OMEvent,
)
from studio.engine.timeline import Point, Timeline, load_timeline, series_csv
from studio.engine.whatif import WhatIfResult
from studio.ui import format as fmt
from studio.ui.loaders import ThreadDetail
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.common import ElidedLabel, empty_state
from studio.ui.widgets.whatif_panel import WhatIfPanel

pg.setConfigOptions(antialias=True, background="w", foreground="#374151")

COLOURS = {
    "message": QColor("#2563eb"), "observation_log": QColor("#d97706"), "buffered": QColor("#7c3aed"),
    "threshold": QColor("#dc2626"), "reflection_threshold": QColor("#ea580c"), "whatif": QColor("#0f766e"),
}
#: Marker style per event kind: (symbol, fill colour, size px).
MARKERS = {
    OBSERVATION: ("o", "#2563eb", 11), BUFFERING: ("t1", "#7c3aed", 10), ACTIVATION: ("d", "#7c3aed", 11),
    REFLECTION: ("star", "#ea580c", 15), REFLECTION_ACTIVATION: ("star", "#ea580c", 15),
    REFLECTION_BUFFERING: ("t1", "#ea580c", 10), THREAD_UPDATE: ("s", "#6b7280", 7),
}
X_MODES = ("time", "turn")
#: Below this tab width (px) the What-if panel folds away so the chart keeps its room.
NARROW_WIDTH = 560


def ensure_gui_thread_gc() -> None:
    """Make sure cyclic garbage collection runs only on the GUI thread (see studio.ui.app).

    pyqtgraph's items sit in reference cycles (context menus, signal lambdas); freed from a worker
    thread they would delete Qt objects off the GUI thread. `application()` already sets this up;
    this covers charts created on a QApplication the studio did not configure (idempotent).
    """
    from studio.ui.app import collect_garbage_on_gui_thread

    app = QCoreApplication.instance()
    if app is not None:
        collect_garbage_on_gui_thread(app)


class WeakMethod:
    """Call OWNER.NAME(...) while OWNER lives (else return ""), without keeping OWNER alive.

    pyqtgraph keeps a marker tooltip callable on its item; a bound method there would tie the item
    and the widget in a reference cycle, which Python may collect on a worker thread (deleting Qt
    objects off the GUI thread).
    """

    def __init__(self, owner, name: str):
        self._ref = weakref.ref(owner)
        self._name = name

    def __call__(self, *args, **kwargs):
        owner = self._ref()
        return getattr(owner, self._name)(*args, **kwargs) if owner is not None else ""


#: File-dialog filters of the chart exports, by kind.
EXPORT_FILTERS = {"png": "PNG images (*.png)", "svg": "SVG images (*.svg)", "csv": "CSV files (*.csv)"}


def ask_export_path(parent, kind: str, default_name: str) -> str | None:
    """Ask where to export a chart or its data (KIND png, svg or csv); None when the user cancels."""
    path, _ = QFileDialog.getSaveFileName(parent, "Export", default_name, EXPORT_FILTERS[kind])
    return path or None


def write_chart_png(plot, path: str, width: int = 1600) -> None:
    """Write pyqtgraph PlotWidget PLOT as a PNG WIDTH px wide (height in proportion) to PATH."""
    from pyqtgraph.exporters import ImageExporter

    exporter = ImageExporter(plot.getPlotItem())
    exporter.parameters()["width"] = width
    exporter.export(path)


def write_chart_svg(plot: pg.PlotWidget, path: str, title: str = "Memory Studio chart") -> None:
    """Write PLOT as SVG to PATH: pyqtgraph's exporter, else Qt's SVG generator.

    pyqtgraph 0.14's SVGExporter cannot parse the closing `Z` Qt 6.11 writes into clip paths
    (pyqtgraph issue #3485); Qt's generator renders the same widget as vectors. Raises OSError
    when PATH cannot be written.
    """
    from pyqtgraph.exporters import SVGExporter

    try:
        SVGExporter(plot.getPlotItem()).export(path)
        return
    except ValueError:
        pass
    from PySide6.QtCore import QRect
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator

    generator = QSvgGenerator()
    generator.setFileName(path)
    generator.setSize(plot.size())
    generator.setViewBox(QRect(0, 0, plot.width(), plot.height()))
    generator.setTitle(title)
    painter = QPainter(generator)
    try:
        plot.render(painter)
    finally:
        painter.end()
    try:
        ok = "<svg" in open(path, encoding="utf-8", errors="replace").read(4096)
    except OSError as exc:
        raise OSError(f"Cannot write {path}: {exc}") from exc
    if not ok:
        raise OSError(f"Cannot write {path}")


def event_y(event: OMEvent, point: Point | None) -> float:
    """Return where a marker sits: the window before an observation/activation, the log before a reflection."""
    if event.kind in (OBSERVATION, ACTIVATION) and event.tokens is not None:
        return float(event.tokens)
    if event.kind in (REFLECTION, REFLECTION_ACTIVATION, REFLECTION_BUFFERING) and event.tokens is not None:
        return float(event.tokens)
    return float(point.message_tokens) if point is not None else 0.0


def event_text(event: OMEvent) -> str:
    """Return an event's tooltip text (plain text: times, tokens, cycle, generation)."""
    title = event.type.replace("-", " ")
    lines = [title[:1].upper() + title[1:] + (" (inferred from the generation log)" if event.inferred else "")]
    if event.at:
        lines.append(f"at {fmt.local_time(event.at, seconds=True)} · turn {event.turn}")
    if event.kind in (OBSERVATION, BUFFERING, ACTIVATION):
        if event.tokens is not None:
            lines.append(f"{fmt.tokens(event.tokens)} message tokens")
        if event.output_tokens is not None:
            lines.append(f"{fmt.tokens(event.output_tokens)} observation tokens written")
    elif event.kind in (REFLECTION, REFLECTION_ACTIVATION, REFLECTION_BUFFERING):
        if event.tokens is not None:
            lines.append(f"{fmt.tokens(event.tokens)} observation tokens in")
        if event.output_tokens is not None:
            lines.append(f"{fmt.tokens(event.output_tokens)} tokens out")
    if event.total_observation_tokens is not None and event.kind != THREAD_UPDATE:
        lines.append(f"log after: {fmt.tokens(event.total_observation_tokens)} tokens")
    if event.end_ms is not None and event.at_ms is not None and event.end_ms > event.at_ms:
        lines.append(f"took {event.end_ms - event.at_ms:,} ms")
    if event.cycle_id:
        lines.append(f"cycle {event.cycle_id}")
    if event.generation is not None:
        lines.append(f"generation {event.generation}")
    if event.kind == THREAD_UPDATE and event.detail:
        lines.append(f"new title: {event.detail}")
    if event.error:
        lines.append(f"error: {event.error}")
    return "\n".join(lines)


@dataclass
class _Spot:
    """One clickable marker: the event and its point."""

    event_index: int
    whatif: bool = False


class TimelineTab(QWidget):
    """Chart one thread's OM timeline, with the What-if panel beside it."""

    message_selected = Signal(str)       # message id clicked on the chart
    generation_selected = Signal(str)    # OM record id (generation) clicked on the chart
    time_selected = Signal(object)       # epoch ms of the point clicked (the turn context view follows)
    timeline_loaded = Signal(object)     # the Timeline now drawn
    whatif_drawn = Signal(object)        # the WhatIfResult now drawn over it

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        ensure_gui_thread_gc()
        self._runner = runner
        self._detail: ThreadDetail | None = None
        self._timeline: Timeline | None = None
        self._whatif: WhatIfResult | None = None
        self._wanted: str | None = None      # thread to load when the tab is shown
        self._loaded_for: tuple | None = None
        self._x_mode = "turn"
        self.use_helper = False
        self.selected_point: Point | None = None

        self.x_combo = QComboBox()
        self.x_combo.addItem("Over time", "time")
        self.x_combo.addItem("Over turns", "turn")
        self.x_combo.setCurrentIndex(X_MODES.index(self._x_mode))
        self.x_combo.currentIndexChanged.connect(self._on_x_combo_current_index_changed)
        self.show_buffered = QAction("Buffered tokens", self, checkable=True, checked=True)
        self.show_thresholds = QAction("Thresholds", self, checkable=True, checked=True)
        for action in (self.show_buffered, self.show_thresholds):
            action.toggled.connect(self._redraw)
        self.show_button = QToolButton()
        self.show_button.setText("Show")
        self.show_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        show_menu = QMenu(self.show_button)
        show_menu.addAction(self.show_buffered)
        show_menu.addAction(self.show_thresholds)
        self.show_button.setMenu(show_menu)
        self.reset_button = QToolButton()
        self.reset_button.setText("Fit")
        self.reset_button.setToolTip("Zoom to fit (drag to pan, wheel to zoom)")
        self.reset_button.clicked.connect(self._on_reset_button_clicked)
        self.whatif_button = QToolButton()
        self.whatif_button.setText("What-if")
        self.whatif_button.setCheckable(True)
        self.whatif_button.setChecked(True)
        self.whatif_button.toggled.connect(self._on_whatif_button_toggled)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        menu = QMenu(self.export_button)
        # Bound methods, not lambdas: a lambda holding `self` makes a cycle the collector may break on a
        # worker thread, deleting Qt objects there (a deadlock with the GUI thread).
        menu.addAction("Chart as PNG…", self._on_export_png_triggered)
        menu.addAction("Chart as SVG…", self._on_export_svg_triggered)
        menu.addAction("Series as CSV…", self._on_export_csv_triggered)
        self.export_button.setMenu(menu)
        self.summary = ElidedLabel("", "muted")
        self.readout = ElidedLabel("", "muted")

        bar = QToolBar()  # too narrow a tab folds the buttons into the toolbar's » menu
        bar.setIconSize(QSize(1, 1))
        bar.addWidget(self.x_combo)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        bar.addWidget(spacer)
        for button in (self.show_button, self.reset_button, self.whatif_button, self.export_button):
            bar.addWidget(button)

        self.plot = pg.PlotWidget()
        self.plot.setMinimumSize(160, 120)
        item = self.plot.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setLabel("left", "tokens")
        item.setDownsampling(auto=True, mode="peak")  # a 20,000-message thread draws as fast as a short one
        item.setClipToView(True)
        self.legend = item.addLegend(offset=(6, 4), labelTextSize="8pt", colCount=3)
        self.time_axis = pg.DateAxisItem(orientation="bottom")
        self.turn_axis = pg.AxisItem(orientation="bottom")
        item.setAxisItems({"bottom": self.turn_axis})
        self.vline = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#9ca3af", width=1))
        self.hline = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen("#9ca3af", width=1))
        self.selection_line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#111827", width=1,
                                                                                      style=Qt.PenStyle.DashLine))
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                           slot=self._on_scene_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_scene_mouse_clicked)

        chart = QWidget()
        cl = QVBoxLayout(chart)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(bar)
        cl.addWidget(self.plot, 1)
        cl.addWidget(self.readout)
        cl.addWidget(self.summary)

        self.whatif_panel = WhatIfPanel(runner)
        self.whatif_panel.result_ready.connect(self._on_whatif_panel_result_ready)
        self.whatif_panel.cleared.connect(self._on_whatif_panel_cleared)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.whatif_scroll = QScrollArea()
        self.whatif_scroll.setWidget(self.whatif_panel)
        self.whatif_scroll.setWidgetResizable(True)
        self.whatif_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._panel_placed = False
        self.whatif_scroll.setMinimumWidth(100)
        self._whatif_auto_hidden = False
        self.splitter.addWidget(chart)
        self.splitter.addWidget(self.whatif_scroll)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 0)

        self._message = empty_state("Select a thread with observational memory to see its timeline.")
        self._stack = QStackedWidget()
        self._stack.addWidget(self._message)
        self._stack.addWidget(self.splitter)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(10, 10, 10, 10)
        layout.addWidget(self._stack)
        self._spots: list[pg.ScatterPlotItem] = []
        self._xs: dict[int, float] = {}
        self._x_bounds = (0.0, 1.0)

    # -- public API ----------------------------------------------------------------------------

    @property
    def timeline(self) -> Timeline | None:
        """Return the timeline drawn, or None."""
        return self._timeline

    @property
    def whatif(self) -> WhatIfResult | None:
        """Return the what-if replay drawn over the timeline, or None."""
        return self._whatif

    @property
    def x_mode(self) -> str:
        """Return "time" or "turn" (what the horizontal axis shows)."""
        return self._x_mode

    def set_x_mode(self, mode: str) -> None:
        """Draw over MODE ("time" or "turn")."""
        self.x_combo.setCurrentIndex(X_MODES.index(mode))

    def clear(self) -> None:
        """Show nothing (no thread)."""
        self._detail, self._timeline, self._whatif, self._wanted, self._loaded_for = None, None, None, None, None
        self._runner.cancel("timeline")
        self.whatif_panel.set_timeline(None)
        self._show_message("Select a thread with observational memory to see its timeline.")

    def show_detail(self, detail: ThreadDetail) -> None:
        """Show DETAIL's thread: its timeline is read now if the tab is visible, else when it is shown."""
        self._detail = detail
        if detail.record is None:
            self._timeline, self._loaded_for = None, None
            self.whatif_panel.set_timeline(None)
            self._show_message("This thread has no observational memory record: there is no timeline to draw.")
            return
        key = (detail.thread.id, detail.record.id, detail.record.get("updatedAt"), detail.message_count)
        if key == self._loaded_for:
            return
        self._wanted = detail.thread.id
        if self.isVisible():
            self.load()

    def load(self) -> None:
        """Read the wanted thread's timeline in the background (superseding an earlier read)."""
        detail = self._detail
        if detail is None or detail.record is None:
            return
        thread_id = detail.thread.id
        key = (thread_id, detail.record.id, detail.record.get("updatedAt"), detail.message_count)
        self._wanted = None
        if self._timeline is None or self._timeline.thread_id != thread_id:
            self._show_message("Reading the timeline…")
        self._runner.submit_call(load_timeline, thread_id, helper=self.use_helper,
                                 on_done=lambda tl: self._on_timeline_loaded(tl, key),
                                 on_error=self._on_timeline_failed, key="timeline")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._wanted is not None:
            self.load()

    def export_png(self, path: str, width: int = 1600) -> None:
        """Write the chart as a PNG WIDTH px wide to PATH."""
        write_chart_png(self.plot, path, width)

    def export_svg(self, path: str) -> None:
        """Write the chart as SVG to PATH."""
        write_chart_svg(self.plot, path, "Memory Studio timeline")

    def export_csv(self, path: str) -> None:
        """Write the real (and what-if) series as CSV to PATH (UTF-8)."""
        if self._timeline is None:
            return
        text = series_csv(self._timeline, self._whatif.points if self._whatif else None)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    def x_of(self, point: Point) -> float:
        """Return POINT's horizontal position in the current mode (s since epoch, or turn)."""
        return self._xs.get(id(point), 0.0)

    def select_point(self, point: Point) -> None:
        """Select POINT: emit its message and generation (History and Messages follow)."""
        tl = self._timeline
        if tl is None:
            return
        self.selected_point = point
        self.selection_line.setPos(self.x_of(point))
        if self.selection_line.scene() is None:
            self.plot.addItem(self.selection_line, ignoreBounds=True)
        bits = []
        if point.message_index is not None and 0 <= point.message_index < len(tl.messages):
            message = tl.messages[point.message_index]
            if self._detail is None or message.thread_id == self._detail.thread.id:  # resource scope: others' too
                self.message_selected.emit(message.id)
            bits.append(f"message {point.message_index + 1} ({message.role})")
        record = next((g for g in tl.generations if g.generation_count == point.generation), None)
        if record is not None:
            self.generation_selected.emit(record.id)
            bits.append(f"generation {record.generation_count}")
        self.readout.setText("Selected " + " and ".join(bits) + " — see Messages and History." if bits else "")
        if point.at_ms is not None:
            self.time_selected.emit(point.at_ms)

    def select_event(self, event_index: int) -> None:
        """Select the point drawn for event EVENT_INDEX."""
        if self._timeline is None:
            return
        point = self._timeline.point_for_event(event_index)
        if point is not None:
            self.select_point(point)

    # -- loading -------------------------------------------------------------------------------

    def _show_message(self, text: str) -> None:
        self._message.setText(text)
        self._stack.setCurrentIndex(0)

    def _on_timeline_loaded(self, timeline: Timeline, key: tuple) -> None:
        if self._detail is None or timeline.thread_id != self._detail.thread.id:
            return
        same_thread = self._timeline is not None and self._timeline.thread_id == timeline.thread_id
        self._timeline, self._loaded_for = timeline, key
        if not same_thread:
            self._whatif = None
            self.selected_point = None
        self._stack.setCurrentIndex(1)
        self.whatif_panel.set_timeline(timeline, keep=same_thread)
        self._redraw()
        self._fit()
        self.timeline_loaded.emit(timeline)

    def _on_timeline_failed(self, exc: Exception) -> None:
        self._timeline = None
        self._show_message(f"The timeline could not be built.\n\n{exc}")

    def _on_whatif_panel_result_ready(self, result: WhatIfResult) -> None:
        if self._timeline is None or result.thread_id != self._timeline.thread_id:
            return
        self._whatif = result
        self._redraw()
        self.whatif_drawn.emit(result)

    def _on_whatif_panel_cleared(self) -> None:
        self._whatif = None
        self._redraw()

    # -- drawing -------------------------------------------------------------------------------

    def _positions(self, points: list[Point]) -> list[float]:
        """Return x for POINTS: seconds since the epoch, or turn spread over [turn, turn + 0.8)."""
        if not points:
            return []
        if self._x_mode == "time":  # never backwards: a response seeded before its step-0 observation follows it
            ms = np.array([np.nan if p.at_ms is None else p.at_ms for p in points], dtype=float)
            filled = np.fmax.accumulate(ms)
            return list(np.nan_to_num(filled, nan=float(np.nanmin(ms)) if np.isfinite(ms).any() else 0.0) / 1000)
        turns = np.array([p.turn for p in points], dtype=float)
        order = np.argsort(turns, kind="stable")
        _, first, counts = np.unique(turns[order], return_index=True, return_counts=True)
        rank = np.empty(len(points))
        within = np.arange(len(points)) - np.repeat(first, counts)
        rank[order] = within / np.repeat(counts, counts)
        return list(turns + 0.8 * rank)

    def _redraw(self) -> None:
        item = self.plot.getPlotItem()
        item.clear()
        self.legend.clear()
        self._spots = []
        self._xs: dict[int, float] = {}
        tl = self._timeline
        if tl is None:
            return
        item.addItem(self.vline, ignoreBounds=True)
        item.addItem(self.hline, ignoreBounds=True)
        if self.selected_point is not None:
            item.addItem(self.selection_line, ignoreBounds=True)
        item.setAxisItems({"bottom": self.time_axis if self._x_mode == "time" else self.turn_axis})
        item.setLabel("bottom", "" if self._x_mode == "time" else "turn")
        points = tl.points
        xs = self._positions(points)
        for p, x in zip(points, xs):
            self._xs[id(p)] = x
        self._x_bounds = (min(xs), max(xs)) if xs else (0.0, 1.0)
        pen = lambda key, width=2, style=Qt.PenStyle.SolidLine: pg.mkPen(COLOURS[key], width=width, style=style)
        item.plot(xs, [p.message_tokens for p in points], pen=pen("message"), name="Message window")
        item.plot(xs, [p.observation_tokens for p in points], pen=pen("observation_log"), name="Observation log")
        if self.show_buffered.isChecked() and any(p.buffered_tokens for p in points):
            item.plot(xs, [p.buffered_tokens for p in points], pen=pen("buffered", 1.5, Qt.PenStyle.DashLine),
                      name="Buffered (waiting)")
        if self.show_thresholds.isChecked():
            item.plot(xs, [p.threshold for p in points], pen=pen("threshold", 1.2, Qt.PenStyle.DashLine),
                      name="Observation threshold")
            item.plot(xs, [p.reflection_threshold for p in points],
                      pen=pen("reflection_threshold", 1.2, Qt.PenStyle.DotLine), name="Reflection threshold")
        if any(p.reconstructed for p in points):  # shade the reconstructed stretches of the window
            shaded = [float(p.message_tokens) if p.reconstructed else np.nan for p in points]
            curve = item.plot(xs, shaded, connect="finite", name="Reconstructed",
                              pen=pg.mkPen(QColor(37, 99, 235, 60), width=7))
            curve.setZValue(-2)
        self._draw_events(tl.events, points, xs, whatif=False)
        if self._whatif is not None:
            wp = self._whatif.points
            wxs = self._positions(wp)
            for values, style, name in (([p.message_tokens for p in wp], Qt.PenStyle.DashLine, "What-if window"),
                                        ([p.observation_tokens for p in wp], Qt.PenStyle.DotLine, "What-if log")):
                curve = item.plot(wxs, values, pen=pen("whatif", 1.8, style), name=f"{name} (estimate)")
                curve.setZValue(-1)  # under the real series
            if self.show_thresholds.isChecked() and (
                    {p.threshold for p in wp} != {p.threshold for p in points}
                    or {p.reflection_threshold for p in wp} != {p.reflection_threshold for p in points}):
                for values in ([p.threshold for p in wp], [p.reflection_threshold for p in wp]):
                    curve = item.plot(wxs, values, pen=pen("whatif", 1.0, Qt.PenStyle.DashDotLine))
                    curve.setZValue(-1)
                self.legend.addItem(curve, "What-if thresholds")
            self._draw_events(self._whatif.events, wp, wxs, whatif=True)
        n_recon = sum(1 for p in points if p.reconstructed)
        shown = [e for e in tl.events if e.kind != THREAD_UPDATE]
        inferred = sum(1 for e in shown if e.inferred)
        text = (f"{len(shown)} OM event{'s' if len(shown) != 1 else ''} "
                f"({inferred} inferred from the generation log) · {len(points):,} points, {n_recon:,} reconstructed"
                f" · {tl.scope} scope, generation {tl.generations[-1].generation_count}")
        if tl.scope == "resource":
            text += " · the other threads' context is not replayed (estimate)"
        self.summary.setText(text)
        self.summary.setToolTip(fmt.plain_tooltip(text))

    def _draw_events(self, events: list[OMEvent], points: list[Point], xs: list[float], *, whatif: bool) -> None:
        """Draw one marker per event, one scatter item per style (uniform styles draw fast)."""
        by_event = {p.event_index: (p, x) for p, x in zip(points, xs) if p.event_index is not None}
        groups: dict[tuple, tuple[list, list, list]] = {}
        for i, event in enumerate(events):
            found = by_event.get(i)
            if found is None:
                continue
            point, x = found
            symbol, colour, size = MARKERS.get(event.kind, ("o", "#6b7280", 8))
            failed = event.status in ("failed", "unfinished")
            fill = None if whatif or failed else colour
            style = ("x" if event.status == "failed" else symbol, size, fill,
                     COLOURS["whatif"].name() if whatif else colour)
            gx, gy, gd = groups.setdefault(style, ([], [], []))
            gx.append(x)
            gy.append(event_y(event, point))
            gd.append(_Spot(i, whatif))
        for (symbol, size, fill, line), (gx, gy, gd) in groups.items():
            scatter = pg.ScatterPlotItem(
                x=np.array(gx, dtype=float), y=np.array(gy, dtype=float), data=np.array(gd, dtype=object),
                symbol=symbol, size=size, pen=pg.mkPen(line, width=1.5),
                brush=pg.mkBrush(fill) if fill else pg.mkBrush(255, 255, 255, 0),
                hoverable=True, tip=WeakMethod(self, "_spot_tip"), hoverPen=pg.mkPen("#111827", width=2))
            scatter.sigClicked.connect(self._on_scatter_clicked)
            self.plot.addItem(scatter)
            self._spots.append(scatter)

    def _spot_tip(self, x: float, y: float, data: _Spot) -> str:
        if data.whatif:
            events = self._whatif.events if self._whatif else []
        else:
            events = self._timeline.events if self._timeline else []
        if not 0 <= data.event_index < len(events):
            return ""
        text = event_text(events[data.event_index])
        if data.whatif:
            text = "What-if (estimate): " + text
        return fmt.plain_tooltip(text)

    def _fit(self) -> None:
        """Show everything, with headroom above the data for the legend."""
        item = self.plot.getPlotItem()
        series = [(self._timeline.points if self._timeline else []), (self._whatif.points if self._whatif else [])]
        top = max((max(p.message_tokens, p.observation_tokens, p.threshold, p.reflection_threshold)
                   for points in series for p in points), default=0)
        if not self._xs or not top:
            item.enableAutoRange()
            item.autoRange()
            return
        low, high = self._x_bounds
        pad = (high - low) * 0.02 or 0.5
        item.setXRange(low - pad, high + pad, padding=0)
        item.setYRange(0, top * 1.3, padding=0.02)

    # -- slots ---------------------------------------------------------------------------------

    def _on_x_combo_current_index_changed(self, index: int) -> None:
        self._x_mode = X_MODES[index] if 0 <= index < len(X_MODES) else "time"
        self._redraw()
        self._fit()

    def _on_reset_button_clicked(self) -> None:
        self._fit()

    def _on_whatif_button_toggled(self, checked: bool) -> None:
        self.whatif_scroll.setVisible(checked)

    def resizeEvent(self, event) -> None:
        """Fold the What-if panel away while the tab is too narrow for it and the chart (the button brings it back)."""
        super().resizeEvent(event)
        width = self.splitter.width()
        if not self._panel_placed and width >= NARROW_WIDTH:  # the panel gets the room it asks for, at most 45%
            self._panel_placed = True
            scrollbar = self.whatif_scroll.verticalScrollBar().sizeHint().width()
            panel = min(self.whatif_panel.sizeHint().width() + scrollbar + 4, int(width * 0.45))
            self.splitter.setSizes([max(width - panel, 1), panel])
        narrow = event.size().width() < NARROW_WIDTH
        if narrow and self.whatif_button.isChecked() and not self._whatif_auto_hidden:
            self._whatif_auto_hidden = True
            self.whatif_button.setChecked(False)
        elif not narrow and self._whatif_auto_hidden:
            self._whatif_auto_hidden = False
            self.whatif_button.setChecked(True)

    def _nearest_point(self, x: float) -> Point | None:
        if self._timeline is None or not self._timeline.points:
            return None
        best, best_d = None, math.inf
        for p in self._timeline.points:
            d = abs(self._xs.get(id(p), 0.0) - x)
            if d < best_d:
                best, best_d = p, d
        return best

    def _on_scene_mouse_moved(self, args) -> None:
        pos = args[0]
        vb = self.plot.getPlotItem().getViewBox()
        if not self.plot.sceneBoundingRect().contains(pos) or self._timeline is None:
            return
        mapped = vb.mapSceneToView(pos)
        self.vline.setPos(mapped.x())
        self.hline.setPos(mapped.y())
        point = self._nearest_point(mapped.x())
        if point is not None:
            when = fmt.local_time(point.at, seconds=True) if point.at else "?"
            self.readout.setText(
                f"{when} · turn {point.turn} · window {fmt.tokens(point.message_tokens)} / "
                f"{fmt.tokens(point.threshold)} · log {fmt.tokens(point.observation_tokens)} / "
                f"{fmt.tokens(point.reflection_threshold)}"
                + (f" · buffered {fmt.tokens(point.buffered_tokens)}" if point.buffered_tokens else "")
                + (" · reconstructed" if point.reconstructed else ""))

    def _on_scene_mouse_clicked(self, ev) -> None:
        if ev.button() != Qt.MouseButton.LeftButton or self._timeline is None or ev.isAccepted():
            return
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        point = self._nearest_point(vb.mapSceneToView(ev.scenePos()).x())
        if point is not None:
            self.select_point(point)

    def _on_scatter_clicked(self, _item, spots, _ev=None) -> None:
        if not len(spots):
            return
        data = spots[0].data()
        if isinstance(data, _Spot) and not data.whatif:
            self.select_event(data.event_index)
        elif isinstance(data, _Spot) and self._whatif is not None:
            point = next((p for p in self._whatif.points if p.event_index == data.event_index), None)
            if point is not None and self._timeline is not None and point.message_index is not None:
                real = next((p for p in self._timeline.points if p.message_index == point.message_index), None)
                if real is not None:
                    self.select_point(real)

    def _on_export_png_triggered(self) -> None:
        self._export_dialog("png")

    def _on_export_svg_triggered(self) -> None:
        self._export_dialog("svg")

    def _on_export_csv_triggered(self) -> None:
        self._export_dialog("csv")

    def _export_dialog(self, kind: str) -> None:
        name = (self._timeline.thread_id or "timeline") if self._timeline else "timeline"
        path = ask_export_path(self, kind, f"{name}-timeline.{kind}")
        if not path:
            return
        try:
            {"png": self.export_png, "svg": self.export_svg, "csv": self.export_csv}[kind](path)
        except OSError as exc:
            self.readout.setText(f"Export failed: {exc}")
        else:
            self.readout.setText(f"Exported {path}")

