"""The Timeline's chart: pyqtgraph curves and event markers drawn from prepared float arrays.

`TimelineChart.draw` takes `studio.engine.timeline_series.ChartSeries` (built off the GUI thread)
and never loops over a thread's points: switching the x axis swaps arrays. Step-like series come
without their inner run points, curves are drawn without antialiasing when long, and the What-if
overlay uses solid pens (Qt strokes a dashed 20,000-vertex path dash by dash, ~1 s a repaint). Long
curves are drawn through their pixel columns' extremes (`curve_decimation.DecimatedCurve`).
A row under the chart explains the marker shapes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPixmap
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QWidget

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
from studio.engine.timeline_series import ChartSeries
from studio.ui.gc_collector import WeakMethod
from studio.ui.widgets.curve_decimation import DecimatedCurve

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
#: The marker legend: (label, kind or a special key), in reading order.
MARKER_LEGEND = [("observation", OBSERVATION), ("buffered chunk", BUFFERING), ("activation", ACTIVATION),
                 ("reflection", REFLECTION), ("reflection buffered", REFLECTION_BUFFERING),
                 ("thread update", THREAD_UPDATE), ("failed", "failed"), ("what-if (hollow)", "whatif")]
#: Curves longer than this are drawn without antialiasing (a 20,000-point curve strokes 5x faster).
ANTIALIAS_MAX_POINTS = 2000
#: A series (real or What-if overlay) of this many points or more is drawn an item per turn of the event loop.
PROGRESSIVE_MIN_POINTS = 5000


def spot_event(data) -> tuple[int, bool] | None:
    """Return (event index, whether it is a What-if event) of a marker's data, or None."""
    try:
        value = int(data)
    except (TypeError, ValueError):
        return None
    return (-value - 1, True) if value < 0 else (value, False)


def marker_style(kind: str, status: str | None, whatif: bool) -> tuple[str, int, str | None, str]:
    """Return (symbol, size px, fill colour or None for hollow, outline colour) of an event's marker."""
    symbol, colour, size = MARKERS.get(kind, ("o", "#6b7280", 8))
    failed = status in ("failed", "unfinished")
    fill = None if whatif or failed else colour
    return ("x" if status == "failed" else symbol, size, fill, COLOURS["whatif"].name() if whatif else colour)


def symbol_pixmap(symbol: str, size: int, fill: str | None, line: str, device_ratio: float = 1.0) -> QPixmap:
    """Return a small transparent pixmap of one marker SYMBOL (for the marker legend)."""
    from pyqtgraph.graphicsItems.ScatterPlotItem import drawSymbol

    side = size + 6
    pixmap = QPixmap(int(side * device_ratio), int(side * device_ratio))
    pixmap.setDevicePixelRatio(device_ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.translate(side / 2, side / 2)
        drawSymbol(painter, symbol, size, pg.mkPen(line, width=1.5),
                   pg.mkBrush(fill) if fill else pg.mkBrush(255, 255, 255, 0))
    finally:
        painter.end()
    return pixmap


def line_pixmap(pen, device_ratio: float = 1.0, width: int = 22, height: int = 12) -> QPixmap:
    """Return a small transparent pixmap of a line drawn with PEN (a curve's legend sample)."""
    pixmap = QPixmap(int(width * device_ratio), int(height * device_ratio))
    pixmap.setDevicePixelRatio(device_ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(pen)
        painter.drawLine(2, height // 2, width - 2, height // 2)
    finally:
        painter.end()
    return pixmap


class WrappingLegend(QWidget):
    """Legend entries (a sample pixmap and a text) in rows under the chart, as many a row as the width holds.

    The legend never makes the chart wider than the tab gives, and never covers the data.
    """

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(0, 0, 0, 0)
        self._grid.setHorizontalSpacing(4)
        self._grid.setVerticalSpacing(0)
        self.entries: dict[str, QLabel] = {}
        self._pairs: list[tuple[QLabel, QLabel]] = []
        self._columns = 0

    def set_entries(self, entries: list[tuple[QPixmap, str]]) -> None:
        """Show ENTRIES (sample, text), in order, replacing the previous ones."""
        for icon, label in self._pairs:
            self._grid.removeWidget(icon)
            self._grid.removeWidget(label)
            icon.deleteLater()
            label.deleteLater()
        self.entries, self._pairs = {}, []
        for pixmap, text in entries:
            icon = QLabel()
            icon.setPixmap(pixmap)
            label = QLabel(text)
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setProperty("class", "muted")
            self._pairs.append((icon, label))
            self.entries[text] = label
        self.setVisible(bool(entries))
        self._columns = 0
        self._arrange(self._fitting_columns(self.width()) if self.width() > 0 else max(1, len(entries)))

    def _entry_width(self) -> int:
        return max((icon.sizeHint().width() + label.sizeHint().width() for icon, label in self._pairs),
                   default=0) + 12

    def _fitting_columns(self, width: int) -> int:
        return max(1, min(len(self._pairs), width // self._entry_width()))

    def _arrange(self, columns: int) -> None:
        if columns == self._columns:
            return
        for icon, label in self._pairs:
            self._grid.removeWidget(icon)
            self._grid.removeWidget(label)
        for column in range(2 * max(self._columns, columns, 1) + 1):
            self._grid.setColumnStretch(column, 0)
        self._columns = columns
        for n, (icon, label) in enumerate(self._pairs):
            row, column = divmod(n, columns)
            self._grid.addWidget(icon, row, 2 * column)
            self._grid.addWidget(label, row, 2 * column + 1)
        self._grid.setColumnStretch(2 * columns, 1)

    def columns(self) -> int:
        """Return how many entries a row shows now."""
        return self._columns

    def resizeEvent(self, event) -> None:
        """Put as many entries on a row as the new width holds."""
        super().resizeEvent(event)
        if self._pairs:
            self._arrange(self._fitting_columns(event.size().width()))


class MarkerLegend(WrappingLegend):
    """Rows explaining the event marker shapes (drawn as on the chart), under the chart."""

    def __init__(self, parent=None):
        super().__init__(parent)
        ratio = self.devicePixelRatioF() or 1.0
        entries = []
        for text, key in MARKER_LEGEND:
            if key == "failed":
                style = ("x", 10, None, "#6b7280")
            elif key == "whatif":
                symbol, _colour, size = MARKERS[OBSERVATION]
                style = (symbol, size, None, COLOURS["whatif"].name())
            else:
                symbol, colour, size = MARKERS[key]
                style = (symbol, min(size, 12), colour, colour)
            entries.append((symbol_pixmap(*style, device_ratio=ratio), text))
        self.set_entries(entries)


class CurveLegend(WrappingLegend):
    """Rows naming the curves drawn (their pens as samples), under the chart instead of over the data."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._key: list[tuple] | None = None   # the names and pens shown

    def set_curves(self, curves: list[tuple[object, str]]) -> None:
        """Show CURVES, (pen, name) pairs in drawing order; unchanged names and pens keep the rows."""
        key = [(name, pen.color().rgba(), pen.widthF(), int(pen.style().value)) for pen, name in curves]
        if key == self._key:
            return
        self._key = key
        ratio = self.devicePixelRatioF() or 1.0
        self.set_entries([(line_pixmap(pen, ratio), name) for pen, name in curves])


class TurnAxis(pg.AxisItem):
    """A bottom axis over turns: ticks only at whole turns (a turn has no half), at 1, 2, 5, 10… spacing.

    pyqtgraph picks 0.5 or 0.25 spacings on a short range; those levels are dropped, and a range shorter
    than one turn still gets a tick at every whole turn.
    """

    def tickSpacing(self, minVal, maxVal, size):
        levels = [(spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size)
                  if spacing >= 1 and float(spacing).is_integer()]
        return levels or [(1.0, 0.0)]


class TimelineChart:
    """Draw a timeline's ChartSeries (and a What-if replay's) on PLOT, with one scatter item per marker style.

    A marker's tooltip is TIP_OWNER.spot_tip(x, y, data) (held weakly); a click on markers calls
    SCATTER_CLICKED(item, spots, event).
    """

    def __init__(self, plot: pg.PlotWidget, tip_owner, scatter_clicked):
        self.plot = plot
        self._tip = WeakMethod(tip_owner, "spot_tip")
        self._scatter_clicked = scatter_clicked
        item = plot.getPlotItem()
        item.showGrid(x=True, y=True, alpha=0.15)
        item.setLabel("left", "tokens")
        # No downsampling nor clip-to-view of pyqtgraph's: its "peak" bins dropped the newest points of the view
        # and drew a bin's peak at the bin's middle (a shifted time over a gap). Each curve keeps the extremes of
        # each pixel column itself (DecimatedCurve), so a 20,000-message thread draws as fast as a short one.
        item.getViewBox().sigResized.connect(WeakMethod(self, "_on_view_resized"))
        self.time_axis = pg.DateAxisItem(orientation="bottom")
        self.turn_axis = TurnAxis(orientation="bottom")
        item.setAxisItems({"bottom": self.turn_axis})
        self.mode = "turn"
        #: The turn axis's label: "turn", or for a resource-scope record whose turns count every thread's
        #: user messages, a label that says so (set by the tab before it draws)
        self.turn_label = "turn"
        self._layers: dict[str, list[tuple]] = {"real": [], "whatif": []}  # (item, series, curve name, markers)
        # Each layer's current drawing round: the later steps of a progressive draw run only while theirs is current.
        self._rounds = {"real": 0, "whatif": 0}
        self._pending = {"real": False, "whatif": False}   # steps still to come

    def set_axis(self, mode: str) -> None:
        """Show the time axis (MODE "time") or the turn axis."""
        item = self.plot.getPlotItem()
        axis = self.time_axis if mode == "time" else self.turn_axis
        if item.getAxis("bottom") is not axis:
            item.setAxisItems({"bottom": axis})
        item.setLabel("bottom", "" if mode == "time" else self.turn_label)

    def clear(self) -> None:
        """Remove every curve and marker (and drop the steps still to come of a progressive draw)."""
        for key in self._rounds:
            self._rounds[key] += 1
            self._pending[key] = False
        self.plot.getPlotItem().clear()
        self._layers = {"real": [], "whatif": []}

    @property
    def drawing(self) -> bool:
        """Return whether a progressive draw (real curves or overlay) still has steps to come."""
        return any(self._pending.values())

    @staticmethod
    def is_long(series: ChartSeries) -> bool:
        """Return whether SERIES is drawn progressively, an item per turn of the event loop (from
        `PROGRESSIVE_MIN_POINTS` points on)."""
        return len(series) >= PROGRESSIVE_MIN_POINTS

    def pending(self, layer: str) -> bool:
        """Return whether LAYER ("real" or "whatif") still has steps of a progressive draw to come."""
        return self._pending[layer]

    def draw(self, series: ChartSeries, events: list[OMEvent], mode: str, *, buffered: bool, thresholds: bool,
             keep: tuple = (), done: Callable[[], None] | None = None) -> None:
        """Draw SERIES over MODE ("time" or "turn") with its EVENTS' markers; KEEP items (crosshair) stay.

        Removes the What-if overlay too (draw it again with `draw_overlay`). A long series
        (`PROGRESSIVE_MIN_POINTS`) is added an item per turn of the event loop and DONE is called once
        all are there (at once for a short one): on the 20,007-message thread the curves and markers
        at once took 12-16 ms of GUI thread, on top of the timeline's delivery and the first paint.
        """
        self.clear()
        item = self.plot.getPlotItem()
        for extra in keep:
            item.addItem(extra, ignoreBounds=True)
        self.mode = mode
        self.set_axis(mode)
        layer = self._layers["real"]

        def pen(key: str, width: float = 2.0, style: Qt.PenStyle = Qt.PenStyle.SolidLine):
            return pg.mkPen(COLOURS[key], width=width, style=style)

        curve = functools.partial(self._add_curve, layer, series)
        steps: list[Callable[[], None]] = [
            functools.partial(curve, "message", pen("message"), "Message window"),
            functools.partial(curve, "observation", pen("observation_log"), "Observation log")]
        if buffered and series.any_buffered:
            steps.append(functools.partial(curve, "buffered", pen("buffered", 1.5, Qt.PenStyle.DashLine),
                                           "Buffered (waiting)"))
        if thresholds:
            steps.append(functools.partial(curve, "threshold", pen("threshold", 1.2, Qt.PenStyle.DashLine),
                                           "Observation threshold"))
            steps.append(functools.partial(curve, "reflection_threshold",
                                           pen("reflection_threshold", 1.2, Qt.PenStyle.DotLine),
                                           "Reflection threshold"))
        if series.any_reconstructed:  # shade the reconstructed stretches of the window
            steps.append(functools.partial(curve, "reconstructed", pg.mkPen(QColor(37, 99, 235, 60), width=7),
                                           "Reconstructed", z=-2, connect="finite"))
        steps += [functools.partial(self._add_marker_group, layer, series, group, whatif=False)
                  for group in self._marker_groups(series, len(events))]
        self._start_steps("real", steps, done, progressive=self.is_long(series))

    def draw_overlay(self, whatif: ChartSeries | None, n_events: int | None, real: ChartSeries, *,
                     thresholds: bool, done: Callable[[], None] | None = None) -> None:
        """Draw the What-if replay WHATIF (with markers for its N_EVENTS events) over the real series (None: remove it).

        A long replay's overlay (`PROGRESSIVE_MIN_POINTS`) is added one item at a time, each in its own
        turn of the event loop, and DONE is called once all are drawn: a 20,000-point replay's curves
        and its thousands of markers at once kept the GUI thread busy for ~50 ms, in pieces no step
        takes more than a few ms. A later
        `draw_overlay`, `draw` or `clear` drops the steps still to come.
        """
        item = self.plot.getPlotItem()
        for entry in self._layers["whatif"]:
            item.removeItem(entry[0])
        self._layers["whatif"] = []
        self._rounds["whatif"] += 1
        self._pending["whatif"] = False
        if whatif is None or n_events is None:
            if done is not None:
                done()
            return
        layer = self._layers["whatif"]
        # The What-if colour at alpha 150 on the white chart, as an opaque colour: Qt strokes a wide
        # translucent pen through a 20,000-point path several times slower (~20 ms a paint on bench-big).
        log = _on_white(COLOURS["whatif"], 150)
        steps: list[Callable[[], None]] = [
            functools.partial(self._add_curve, layer, whatif, "message", pg.mkPen(COLOURS["whatif"], width=1.2),
                              "What-if window (estimate)", z=-1),
            functools.partial(self._add_curve, layer, whatif, "observation", pg.mkPen(log, width=2.4),
                              "What-if log (estimate)", z=-1)]
        if thresholds and not _same_thresholds(whatif, real):
            dashed = pg.mkPen(COLOURS["whatif"], width=1.0, style=Qt.PenStyle.DashDotLine)
            steps.append(functools.partial(self._add_curve, layer, whatif, "threshold", dashed, "What-if thresholds",
                                           z=-1))
            steps.append(functools.partial(self._add_curve, layer, whatif, "reflection_threshold", dashed, z=-1))
        steps += [functools.partial(self._add_marker_group, layer, whatif, group, whatif=True)
                  for group in self._marker_groups(whatif, n_events)]
        # a short thread's overlay: all at once, as it costs little
        self._start_steps("whatif", steps, done, progressive=self.is_long(whatif))

    def _start_steps(self, key: str, steps: list, done: Callable[[], None] | None, *, progressive: bool) -> None:
        """Run STEPS of layer KEY now (not PROGRESSIVE), or the first now and the rest in later turns."""
        if not progressive:
            for step in steps:
                step()
            if done is not None:
                done()
            return
        self._pending[key] = True
        self._run_steps(key, self._rounds[key], steps, done)

    def _run_steps(self, key: str, round_: int, steps: list, done: Callable[[], None] | None) -> None:
        """Run the first of STEPS now and the rest in later turns of the event loop, while ROUND_ of KEY is current."""
        if round_ != self._rounds[key]:
            return   # superseded
        if steps:
            steps[0]()
        if len(steps) > 1:
            QTimer.singleShot(0, self.plot, functools.partial(self._run_steps, key, round_, steps[1:], done))
            return
        self._pending[key] = False
        if done is not None:
            done()

    def set_mode(self, mode: str) -> None:
        """Show the same curves and markers over MODE: only their x arrays change."""
        self.mode = mode
        self.set_axis(mode)
        for layer in self._layers.values():
            for chart_item, series, name, extra in layer:
                if name is not None:
                    chart_item.setData(*series.curve(name, mode))
                else:
                    rows, ys, style = extra
                    chart_item.setData(x=series.x[mode][rows], y=ys, **style)

    def _add_curve(self, layer: list, series: ChartSeries, name: str, pen, label: str | None = None,
                   z: float = 0.0, **kw) -> None:
        x, y = series.curve(name, self.mode)
        curve = DecimatedCurve()
        curve.setData(x, y, pen=pen, name=label, antialias=len(x) <= ANTIALIAS_MAX_POINTS, **kw)
        curve.setZValue(z)
        self.plot.getPlotItem().addItem(curve)
        layer.append((curve, series, name, None))

    def _on_view_resized(self, *_view) -> None:
        """Decimate the curves anew for the view's new width (a range change does it by itself)."""
        for layer in self._layers.values():
            for chart_item, _series, name, _extra in layer:
                if name is not None:
                    chart_item.refresh()

    @staticmethod
    def _marker_groups(series: ChartSeries, n_events: int) -> list[tuple[str, str, np.ndarray]]:
        """Return SERIES's marker groups (kind, status, members) without the events beyond N_EVENTS."""
        valid = (series.event_ids >= 0) & (series.event_ids < n_events)
        groups = [(kind, status, members[valid[members]]) for kind, status, members in series.marker_groups()]
        return [group for group in groups if len(group[2])]

    def _add_marker_group(self, layer: list, series: ChartSeries, group: tuple[str, str, np.ndarray], *,
                          whatif: bool) -> None:
        kind, status, members = group
        symbol, size, fill, line = marker_style(kind, status, whatif)
        ids = series.event_ids[members]
        style = {"data": -(ids + 1) if whatif else ids, "symbol": symbol, "size": size,
                 "pen": pg.mkPen(line, width=1.5),
                 "brush": pg.mkBrush(fill) if fill else pg.mkBrush(255, 255, 255, 0),
                 "hoverable": True, "tip": self._tip, "hoverPen": pg.mkPen("#111827", width=2)}
        rows, ys = series.event_rows[members], series.event_y[members]
        scatter = pg.ScatterPlotItem(x=series.x[self.mode][rows], y=ys, **style)
        scatter.sigClicked.connect(self._scatter_clicked)
        self.plot.addItem(scatter)
        layer.append((scatter, series, None, (rows, ys, style)))

    def curves(self) -> list[tuple[object, str]]:
        """Return (pen, name) of the named curves drawn, real then What-if, in drawing order (the legend's rows)."""
        return [(entry[0].opts["pen"], entry[0].name()) for layer in self._layers.values() for entry in layer
                if entry[2] is not None and entry[0].name()]

    @property
    def spots(self) -> list[pg.ScatterPlotItem]:
        """Return the marker items drawn (real, then What-if)."""
        return [entry[0] for layer in self._layers.values() for entry in layer if entry[2] is None]

    def fit(self, series: list[ChartSeries], mode: str) -> None:
        """Show everything in SERIES over MODE, with a little room above the data (the legends sit under the chart)."""
        item = self.plot.getPlotItem()
        top = max((s.top() for s in series), default=0.0)
        xs = [s.x[mode] for s in series if len(s)]
        if not xs or not top:
            item.enableAutoRange()
            item.autoRange()
            return
        low, high = min(float(x.min()) for x in xs), max(float(x.max()) for x in xs)
        pad = (high - low) * 0.02 or 0.5
        item.setXRange(low - pad, high + pad, padding=0)
        item.setYRange(0, top * 1.05, padding=0.02)


def _on_white(colour: QColor, alpha: int) -> QColor:
    """Return the opaque colour COLOUR drawn with ALPHA (0-255) over the chart's white background shows."""
    keep = alpha / 255
    return QColor(*(round(c * keep + 255 * (1 - keep)) for c in (colour.red(), colour.green(), colour.blue())))


def _same_thresholds(a: ChartSeries, b: ChartSeries) -> bool:
    """Return whether both series hold the same sets of threshold values (then one set of lines is enough).

    Plain sets of the values, not `np.unique`: that imports `numpy.ma` on its first call (~30 ms on
    the GUI thread, inside the What-if overlay's draw). A NaN never equals another, as before.
    """
    return (set(a.y["threshold"].tolist()) == set(b.y["threshold"].tolist())
            and set(a.y["reflection_threshold"].tolist()) == set(b.y["reflection_threshold"].tolist()))
