"""The Timeline's semantic-recall marks: a violet dashed line at each turn where semantic recall brought
messages into the context, its tooltip listing them.

The marks are read once per timeline load (`studio.app.recall_context.load_recall_marks`, on the database
worker or in the helper process, cancellable: a newer load or a cleared tab cancels the older one), with
the Vectors tab's semanticRecall options; they follow the x axis mode and survive redraws (the tab keeps
their items). Stored text reaches the tooltips as plain text.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt

from studio.app import text as fmt
from studio.app.helper_process import CANCEL
from studio.app.recall_context import load_recall_marks
from studio.ui.tasks import TaskRunner

#: The marks' colour (violet) and the key of their load on the TaskRunner.
RECALL_COLOUR = "#8b5cf6"
TASK_KEY = "recall-marks"


def mark_tooltip(mark: dict) -> str:
    """Return MARK's tooltip text (plain): the turn and each message recall brought in."""
    lines = [f"Semantic recall at turn {mark['turn']} brought in {len(mark['recalled'])} message(s):"]
    for m in mark["recalled"]:
        where = "this thread" if m["thread_id"] == mark.get("thread_id") else f"thread {m['thread_id']}"
        lines.append(f"• {m['role']} · {where} · {fmt.local_time(m['created_at'])}: {m['excerpt']}")
    return "\n".join(lines)


class RecallMarks:
    """The recall lines of one plot, placed on DRAWN's series (a DrawnTimeline: its series and x mode); CHANGED()
    is called when lines came or went (the legend follows). OPTIONS() gives (SemanticConfig, lastMessages) when a
    load starts; without it nothing is read."""

    def __init__(self, plot: pg.PlotWidget, runner: TaskRunner, drawn, changed):
        self._plot = plot
        self._drawn = drawn
        self._changed = changed
        self._pen = pg.mkPen(RECALL_COLOUR, width=2, style=Qt.PenStyle.DashLine)
        self._runner = runner
        self.options = None
        self.vector_store: str | None = None   # Memory's vector store when not the database (File ▸ Vector Store…)
        self.marks: list[dict] = []
        self.lines: list[pg.InfiniteLine] = []
        self.failure: str | None = None   # why the last read failed (the chart stays without lines)
        self._points: list[int] = []     # the point of each line's user message in the chart's arrays
        self._timeline = None

    def load(self, timeline, *, helper: bool) -> None:
        """Read TIMELINE's marks in the background (superseding an earlier read); the old lines go now."""
        self.clear()
        if self.options is None:
            return
        self._timeline = timeline
        config, last_messages = self.options()
        self.failure = None
        self._runner.submit_call(load_recall_marks, timeline.thread_id, config, last_messages, self.vector_store,
                                 CANCEL, helper=helper, on_done=lambda marks: self._on_loaded(timeline, marks),
                                 on_error=self._on_failed, key=TASK_KEY)

    def _on_failed(self, exc: Exception) -> None:
        """The marks could not be read (an attached vector store gone): no line, and why kept in `failure`."""
        self.failure = fmt.read_failure(exc)

    def clear(self) -> None:
        """Cancel a read under way and remove the lines."""
        self._runner.cancel(TASK_KEY)
        had = bool(self.lines)
        for line in self.lines:
            self._plot.removeItem(line)
        self.lines, self.marks, self._points, self._timeline = [], [], [], None
        if had:
            self._changed()

    def legend(self) -> list[tuple[object, str]]:
        """Return the legend's (pen, name) of the lines: one entry when there are any."""
        return [(self._pen, "Semantic recall brought messages in")] if self.lines else []

    def items(self) -> list:
        """Return the lines a redraw keeps on the plot."""
        return list(self.lines)

    def place(self) -> None:
        """Put each line at its user message's x in the drawn x mode (after an axis switch or a redraw)."""
        series = self._drawn.series
        if series is None or self._drawn.timeline is not self._timeline:
            return
        xs = series.x[self._drawn.x_mode]
        for line, point in zip(self.lines, self._points, strict=True):
            line.setPos(float(xs[point]))

    def _on_loaded(self, timeline, marks: list[dict]) -> None:
        if timeline is not self._timeline or not marks:
            return
        where = {m.id: i for i, m in enumerate(timeline.messages)}
        wanted = {where[m["message_id"]] for m in marks if m["message_id"] in where}
        points = {p.message_index: n for n, p in enumerate(timeline.points)
                  if p.kind == "message" and p.message_index in wanted}
        for mark in marks:
            point = points.get(where.get(mark["message_id"], -1))
            if point is None:
                continue
            line = pg.InfiniteLine(angle=90, movable=False, pen=self._pen)
            line.setToolTip(fmt.plain_tooltip(mark_tooltip({**mark, "thread_id": timeline.thread_id})))
            line.setZValue(5)
            self._plot.addItem(line, ignoreBounds=True)
            self.lines.append(line)
            self._points.append(point)
            self.marks.append(mark)
        self.place()
        self._changed()
