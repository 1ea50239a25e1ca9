"""Pointer and selection on the Timeline tab: crosshair readout, clicks, marker tooltips.

`TimelinePointer` is a part of `TimelineTab`: it reads what the tab draws (a `DrawnTimeline` the
tab keeps up to date: the timeline, its chart arrays, the What-if replay, the x axis), follows the
pointer with a crosshair and a readout line, selects what is clicked, and gives the markers'
tooltips. `event_text` gives a marker's tooltip text.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QLabel

from studio.app import text as fmt
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
from studio.engine.timeline import Point, Timeline
from studio.engine.timeline_series import ChartSeries
from studio.engine.whatif_chart import WhatIfChart
from studio.ui.widgets.timeline_chart import spot_event

__all__ = ["DrawnTimeline", "TimelinePointer", "event_text"]


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


class DrawnTimeline:
    """What the Timeline tab shows now (the tab writes it, its pointer reads it).

    THREAD_ID: the thread shown (None: none); TIMELINE and SERIES: its timeline and chart arrays
    (None until read); WHATIF and WHATIF_SERIES: the What-if replay drawn over it, if any; X_MODE:
    "time" or "turn", what the horizontal axis shows.
    """

    __slots__ = ("series", "thread_id", "timeline", "whatif", "whatif_series", "x_mode")

    def __init__(self, x_mode: str):
        self.thread_id: str | None = None
        self.timeline: Timeline | None = None
        self.series: ChartSeries | None = None
        self.whatif: WhatIfChart | None = None
        self.whatif_series: ChartSeries | None = None
        self.x_mode = x_mode


class TimelinePointer(QObject):
    """Follow the pointer over PLOT, select what is clicked, give the markers' tooltips, for what DRAWN shows.

    A click on the chart selects the nearest point (a marker: its event's point; a What-if marker: the
    real point of the same message) and emits its message id, its generation's OM record id and its
    time (epoch ms); READOUT says what is under the pointer, and what was selected. The tab ignores the
    pointer while it draws a long chart anew (`move_to` and `click` are not called then).
    """

    message_selected = Signal(str)       # message id of the point selected
    generation_selected = Signal(str)    # OM record id (generation) of the point selected
    time_selected = Signal(object)       # epoch ms of the point selected

    def __init__(self, plot: pg.PlotWidget, readout: QLabel, drawn: DrawnTimeline, parent: QObject | None = None):
        super().__init__(parent)
        self.plot = plot
        self.readout = readout
        self._drawn = drawn
        self._index: dict[int, int] | None = None       # id(point) -> its row in the arrays, built when first asked
        self.selected_point: Point | None = None
        self.vline = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#9ca3af", width=1))
        self.hline = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen("#9ca3af", width=1))
        self.selection_line = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen("#111827", width=1,
                                                                                      style=Qt.PenStyle.DashLine))

    # -- public API ----------------------------------------------------------------------------

    def timeline_changed(self, *, same_thread: bool) -> None:
        """A timeline was read anew (or dropped): forget its point index, and the selection unless SAME_THREAD."""
        self._index = None
        if not same_thread:
            self.selected_point = None

    def items(self) -> list:
        """Return the pointer's items a redraw keeps on the plot: the crosshair, and the selection line if any."""
        return [self.vline, self.hline] + ([self.selection_line] if self.selected_point else [])

    def place_selection(self) -> None:
        """Put the selection line at the selected point in the current x mode (after an axis switch or redraw)."""
        if self.selected_point is not None:
            self.selection_line.setPos(self.x_of(self.selected_point))

    def x_of(self, point: Point) -> float:
        """Return POINT's horizontal position in the current mode (s since epoch, or turn); 0 if not drawn."""
        drawn = self._drawn
        if drawn.timeline is None or drawn.series is None:
            return 0.0
        if self._index is None:   # on the first click, not while the timeline is shown (~15 ms for 20,000 points)
            self._index = {id(p): i for i, p in enumerate(drawn.timeline.points)}
        row = self._index.get(id(point))
        return float(drawn.series.x[drawn.x_mode][row]) if row is not None else 0.0

    def select_point(self, point: Point) -> None:
        """Select POINT: emit its message and generation (History and Messages follow)."""
        tl = self._drawn.timeline
        if tl is None:
            return
        self.selected_point = point
        self.selection_line.setPos(self.x_of(point))
        if self.selection_line.scene() is None:
            self.plot.addItem(self.selection_line, ignoreBounds=True)
        bits = []
        if point.message_index is not None and 0 <= point.message_index < len(tl.messages):
            message = tl.messages[point.message_index]
            own = self._drawn.thread_id
            if own is None or message.thread_id == own:  # resource scope: others' too
                self.message_selected.emit(message.id)
            bits.append(self._message_words(tl, point.message_index, message))
        record = next((g for g in tl.generations if g.generation_count == point.generation), None)
        if record is not None:
            self.generation_selected.emit(record.id)
            bits.append(f"generation {record.generation_count}")
        self.readout.setText("Selected " + " and ".join(bits) + " — see Messages and History." if bits else "")
        if point.at_ms is not None:
            self.time_selected.emit(point.at_ms)

    def _message_words(self, tl, index: int, message) -> str:
        """Name message INDEX of TL for the readout: in resource scope, by its place in its own thread too."""
        if tl.scope != "resource":
            return f"message {index + 1} ({message.role})"
        across = f"{index + 1} of {len(tl.messages):,} across the resource's threads"
        own = self._drawn.thread_id
        if message.thread_id != own:
            return f"a message of thread {message.thread_id} ({message.role}; {across})"
        nth = sum(1 for m in tl.messages[:index + 1] if m.thread_id == own)
        return f"message {nth} of this thread ({message.role}; {across})"

    def select_event(self, event_index: int) -> None:
        """Select the point drawn for event EVENT_INDEX."""
        if self._drawn.timeline is None:
            return
        point = self._drawn.timeline.point_for_event(event_index)
        if point is not None:
            self.select_point(point)

    # -- tooltips, pointer and clicks -----------------------------------------------------------

    def spot_tip(self, x: float, y: float, data) -> str:
        """Return the tooltip of the marker carrying DATA (plain text as rich text; "" when none)."""
        found = spot_event(data)
        if found is None:
            return ""
        index, whatif = found
        drawn = self._drawn
        if whatif:
            event = drawn.whatif.event(index) if drawn.whatif else None
        else:
            events = drawn.timeline.events if drawn.timeline else []
            event = events[index] if 0 <= index < len(events) else None
        if event is None:
            return ""
        text = event_text(event)
        if whatif:
            text = "What-if (estimate): " + text
        return fmt.plain_tooltip(text)

    def _nearest_point(self, x: float) -> Point | None:
        drawn = self._drawn
        if drawn.timeline is None or drawn.series is None or not drawn.timeline.points:
            return None
        row = drawn.series.nearest(drawn.x_mode, x)
        return drawn.timeline.points[row] if row is not None and row < len(drawn.timeline.points) else None

    def move_to(self, pos) -> None:
        """The pointer moved to scene position POS: move the crosshair there and say what is under it."""
        vb = self.plot.getPlotItem().getViewBox()
        if not self.plot.sceneBoundingRect().contains(pos) or self._drawn.timeline is None:
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

    def click(self, ev) -> None:
        """The chart's scene was clicked (EV, pyqtgraph's event): select the nearest point on a left click."""
        if ev.button() != Qt.MouseButton.LeftButton or self._drawn.timeline is None or ev.isAccepted():
            return
        vb = self.plot.getPlotItem().getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        point = self._nearest_point(vb.mapSceneToView(ev.scenePos()).x())
        if point is not None:
            self.select_point(point)

    def on_scatter_clicked(self, _item, spots, _ev=None) -> None:
        """Markers were clicked: select the first one's point (a What-if marker: the real point of its message)."""
        if not len(spots):
            return
        found = spot_event(spots[0].data())
        if found is None:
            return
        index, whatif = found
        drawn = self._drawn
        if not whatif:
            self.select_event(index)
        elif drawn.whatif is not None:
            message_index = drawn.whatif.message_index_of_event(index)
            if drawn.timeline is not None and message_index is not None:
                real = next((p for p in drawn.timeline.points if p.message_index == message_index), None)
                if real is not None:
                    self.select_point(real)
