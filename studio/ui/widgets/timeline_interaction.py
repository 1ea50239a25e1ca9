"""Pointer and selection on the Timeline tab: crosshair readout, clicks, marker tooltips, exports.

`TimelineInteraction` is a mixin of `TimelineTab` (split out of it to keep modules small): it uses the
tab's plot, chart, readout, crosshair and selection lines, its drawn timeline, chart arrays and What-if
replay, and emits the tab's `message_selected`, `generation_selected` and `time_selected` signals.
`event_text` gives a marker's tooltip text.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

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
from studio.engine.timeline import Point, series_csv
from studio.app import text as fmt
from studio.ui.widgets.timeline_chart import ChartExport, spot_event, write_chart_png, write_chart_svg

__all__ = ["TimelineInteraction", "event_text"]


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


class TimelineInteraction(ChartExport):
    """Mixin of TimelineTab: follow the pointer, select what is clicked, give tooltips, export.

    A click on the chart selects the nearest point (a marker: its event's point; a What-if marker: the
    real point of the same message) and emits its message id, its generation's OM record id and its
    time (epoch ms); while the tab is `drawing` a long chart anew (its old picture held) the pointer and
    clicks are ignored. Exports write the chart (PNG, SVG) or the series (CSV, UTF-8); a failed export
    from the Export menu is reported in the readout line, never raised.
    """

    # -- public API ----------------------------------------------------------------------------

    def export_png(self, path: str, width: int = 1600) -> None:
        """Write the chart as a PNG WIDTH px wide to PATH; OSError if it cannot be written."""
        write_chart_png(self.plot, path, width)

    def export_svg(self, path: str) -> None:
        """Write the chart as SVG to PATH; OSError if it cannot be written."""
        write_chart_svg(self.plot, path, "Memory Studio timeline")

    def export_csv(self, path: str) -> None:
        """Write the real (and what-if) series as CSV to PATH (UTF-8; nothing without a timeline).

        OSError if it cannot be written.
        """
        if self._timeline is None:
            return
        text = series_csv(self._timeline, self._whatif.points if self._whatif else None)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    def x_of(self, point: Point) -> float:
        """Return POINT's horizontal position in the current mode (s since epoch, or turn); 0 if not drawn."""
        if self._timeline is None or self._series is None:
            return 0.0
        if self._index is None:   # on the first click, not while the timeline is shown (~15 ms for 20,000 points)
            self._index = {id(p): i for i, p in enumerate(self._timeline.points)}
        row = self._index.get(id(point))
        return float(self._series.x[self._x_mode][row]) if row is not None else 0.0

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
        own = self._detail.thread.id if self._detail is not None else None
        if message.thread_id != own:
            return f"a message of thread {message.thread_id} ({message.role}; {across})"
        nth = sum(1 for m in tl.messages[:index + 1] if m.thread_id == own)
        return f"message {nth} of this thread ({message.role}; {across})"

    def select_event(self, event_index: int) -> None:
        """Select the point drawn for event EVENT_INDEX."""
        if self._timeline is None:
            return
        point = self._timeline.point_for_event(event_index)
        if point is not None:
            self.select_point(point)

    # -- tooltips, pointer and clicks -----------------------------------------------------------

    def _spot_tip(self, x: float, y: float, data) -> str:
        found = spot_event(data)
        if found is None:
            return ""
        index, whatif = found
        if whatif:
            event = self._whatif.event(index) if self._whatif else None
        else:
            events = self._timeline.events if self._timeline else []
            event = events[index] if 0 <= index < len(events) else None
        if event is None:
            return ""
        text = event_text(event)
        if whatif:
            text = "What-if (estimate): " + text
        return fmt.plain_tooltip(text)

    def _nearest_point(self, x: float) -> Point | None:
        if self._timeline is None or self._series is None or not self._timeline.points:
            return None
        row = self._series.nearest(self._x_mode, x)
        return self._timeline.points[row] if row is not None and row < len(self._timeline.points) else None

    def _on_scene_mouse_moved(self, args) -> None:
        pos = args[0]
        vb = self.plot.getPlotItem().getViewBox()
        if not self.plot.sceneBoundingRect().contains(pos) or self._timeline is None or self.drawing:
            return   # while a long chart is drawn anew the picture shown is the old one (another x axis)
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
        if ev.button() != Qt.MouseButton.LeftButton or self._timeline is None or ev.isAccepted() or self.drawing:
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
        found = spot_event(spots[0].data())
        if found is None:
            return
        index, whatif = found
        if not whatif:
            self.select_event(index)
        elif self._whatif is not None:
            message_index = self._whatif.message_index_of_event(index)
            if self._timeline is not None and message_index is not None:
                real = next((p for p in self._timeline.points if p.message_index == message_index), None)
                if real is not None:
                    self.select_point(real)

    def _export_default_name(self, kind: str) -> str:
        name = (self._timeline.thread_id or "timeline") if self._timeline else "timeline"
        return f"{name}-timeline.{kind}"

    def _export_report(self, text: str) -> None:
        self.readout.setText(text)
