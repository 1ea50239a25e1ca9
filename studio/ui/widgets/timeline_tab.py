"""The Timeline tab: a thread's OM saw-tooth (message window, observation log, thresholds) with events.

The timeline and its chart arrays (`studio.engine.timeline_cache.load_timeline_chart`) are read
on the TaskRunner (the helper process for big databases). What-if is off until the user asks: the
button opens the What-if panel beside the chart, which replays the thread with other settings
(`studio.engine.whatif.simulate`, in the helper process for long threads; see `WhatIfPanel`) and its
series, packed as arrays (`WhatIfChart`), are drawn over the real ones; turning it off removes the
overlay. Zoom and pan with the mouse (pyqtgraph), a crosshair follows the pointer, markers carry
tooltips (their shapes are explained under the chart), and a click selects that message in Messages
and that generation in History (the crosshair, the clicks and the tooltips are the tab's
`TimelinePointer`). The chart exports to PNG and SVG, the series to CSV (the tab's `ChartExport`).
"""

from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QLabel,
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

from studio.app import text as fmt
from studio.app.thread_detail import ThreadDetail
from studio.app.timeline import no_replay_sentence
from studio.app.uncountable import UNCOUNTABLE_MARK, uncountable_sentence
from studio.engine.events import THREAD_UPDATE
from studio.engine.timeline import Timeline, series_csv
from studio.engine.timeline_cache import load_timeline_chart
from studio.engine.timeline_series import X_MODES, ChartSeries
from studio.engine.whatif_chart import WhatIfChart
from studio.ui.gc_collector import ensure_gui_thread_gc
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.chart_export import ChartExport
from studio.ui.widgets.common import ElidedLabel, empty_state, set_role
from studio.ui.widgets.recall_marks import RecallMarks
from studio.ui.widgets.timeline_chart import CurveLegend, MarkerLegend, TimelineChart
from studio.ui.widgets.timeline_pointer import DrawnTimeline, TimelinePointer
from studio.ui.widgets.whatif_panel import WhatIfPanel

#: Below this tab width (px) the What-if panel folds away so the chart keeps its room.
NARROW_WIDTH = 560


#: The What-if button's tooltip (a thread Mastra cannot count says why there is no replay instead).
WHATIF_TIP = "Replay this thread with other OM settings and draw it over the chart"

class _HeldDraw:
    """A long timeline's drawing held out of sight until it is all there: which TIMELINE, and whether to announce it."""

    __slots__ = ("announce", "timeline")

    def __init__(self, timeline: Timeline | None, announce: bool):
        self.timeline, self.announce = timeline, announce


class TimelineTab(QWidget):
    """Chart one thread's OM timeline, with the What-if panel beside it.

    Its parts: `chart` draws, `pointer` follows the pointer and selects what is clicked (its signals
    are the tab's `message_selected`, `generation_selected` and `time_selected`), `exporter` runs the
    Export menu. While the tab is `drawing` a long chart anew (its old picture held) the pointer and
    clicks are ignored.
    """

    message_selected = Signal(str)       # message id clicked on the chart
    generation_selected = Signal(str)    # OM record id (generation) clicked on the chart
    time_selected = Signal(object)       # epoch ms of the point clicked (the turn context view follows)
    timeline_loaded = Signal(object)     # the Timeline now drawn
    whatif_drawn = Signal(object)        # the WhatIfChart now drawn over it

    def __init__(self, runner: TaskRunner, parent=None):
        super().__init__(parent)
        ensure_gui_thread_gc()
        self._runner = runner
        self._detail: ThreadDetail | None = None
        self._drawn = DrawnTimeline("turn")               # the timeline, its chart arrays, the replay's, the x axis
        self._announced: WhatIfChart | None = None      # the last replay `whatif_drawn` was emitted for
        self._unshown: _HeldDraw | None = None          # a long timeline's drawing held out of sight, not yet shown
        self._wanted: str | None = None      # thread to load when the tab is shown
        self._loaded_for: tuple | None = None

        self.x_combo = QComboBox()
        self.x_combo.addItem("Over time", "time")
        self.x_combo.addItem("Over turns", "turn")
        self.x_combo.setCurrentIndex(X_MODES.index(self._drawn.x_mode))
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
        self.whatif_button.setChecked(False)  # off until the user asks
        self.whatif_button.setToolTip(WHATIF_TIP)
        self.whatif_button.toggled.connect(self._on_whatif_button_toggled)
        self.export_button = QToolButton()
        self.export_button.setText("Export")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        # Wrapped, not elided: the footer's figures are read, and a narrow window gives it two lines.
        self.summary = QLabel("")
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        self.summary.setWordWrap(True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Minimum)
        set_role(self.summary, "muted")
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
        self.pointer = TimelinePointer(self.plot, self.readout, self._drawn, self)
        for signal, tab_signal in ((self.pointer.message_selected, self.message_selected),
                                   (self.pointer.generation_selected, self.generation_selected),
                                   (self.pointer.time_selected, self.time_selected)):
            signal.connect(tab_signal)
        self.chart = TimelineChart(self.plot, self.pointer, self.pointer.on_scatter_clicked)
        # semantic recall's turns (violet dashed lines)
        self.recall_marks = RecallMarks(self.plot, runner, self._drawn, changed=lambda: self._fit_legend())
        self.exporter = ChartExport(self.plot, self, title="Memory Studio timeline", write_csv=self._write_csv,
                                    default_name=self._export_default_name, report=self.readout.setText)
        self.export_button.setMenu(self.exporter.menu(self.export_button, "Series as CSV…"))
        self.legend = CurveLegend()   # the curves' names under the chart: over it, they covered the data
        self.marker_legend = MarkerLegend()
        # kept: the proxy forwards the moves only while it lives
        self._mouse_proxy = pg.SignalProxy(self.plot.scene().sigMouseMoved, rateLimit=30,
                                           slot=self._on_scene_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_scene_mouse_clicked)

        chart = QWidget()
        cl = QVBoxLayout(chart)
        cl.setContentsMargins(0, 0, 0, 0)
        cl.addWidget(bar)
        cl.addWidget(self.plot, 1)
        cl.addWidget(self.legend)
        cl.addWidget(self.marker_legend)
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
        self.whatif_scroll.setMinimumWidth(100)
        # The panel's boxes and table shrink to the width it gets; it scrolls down, never sideways.
        self.whatif_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.whatif_scroll.setVisible(False)
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

    # -- public API ----------------------------------------------------------------------------

    @property
    def timeline(self) -> Timeline | None:
        """Return the timeline drawn, or None."""
        return self._drawn.timeline

    @property
    def whatif(self) -> WhatIfChart | None:
        """Return the what-if replay drawn over the timeline, or None."""
        return self._drawn.whatif

    @property
    def use_helper(self) -> bool:
        """Return whether the timeline is read, and the What-if replay runs, in the helper process (big databases)."""
        return self.whatif_panel.use_helper

    @use_helper.setter
    def use_helper(self, use: bool) -> None:
        self.whatif_panel.use_helper = use

    @property
    def x_mode(self) -> str:
        """Return "time" or "turn" (what the horizontal axis shows)."""
        return self._drawn.x_mode

    def set_x_mode(self, mode: str) -> None:
        """Draw over MODE ("time" or "turn")."""
        self.x_combo.setCurrentIndex(X_MODES.index(mode))

    def clear(self) -> None:
        """Show nothing (no thread)."""
        self._detail, self._wanted, self._loaded_for = None, None, None
        drawn = self._drawn
        drawn.thread_id = drawn.timeline = drawn.whatif = drawn.series = drawn.whatif_series = None
        self.pointer.timeline_changed(same_thread=False)
        self._runner.cancel("timeline")
        self.recall_marks.clear()
        self.whatif_panel.set_timeline(None)
        self._show_message("Select a thread with observational memory to see its timeline.")

    def show_detail(self, detail: ThreadDetail) -> None:
        """Show DETAIL's thread: its timeline is read now if the tab is visible, else when it is shown.

        A What-if replay of another thread stops now (see `leave_other_threads`).
        """
        self.leave_other_threads(detail.thread.id)
        self._detail = detail
        self._drawn.thread_id = detail.thread.id
        if detail.record is None:
            self._drawn.timeline = self._drawn.series = self._drawn.whatif_series = None
            self._loaded_for = None
            self.whatif_panel.set_timeline(None)
            self._show_message("This thread has no observational memory record: there is no timeline to draw.")
            return
        key = (detail.thread.id, detail.record.id, detail.record.get("updatedAt"), detail.message_count)
        if key == self._loaded_for:
            return
        self._wanted = detail.thread.id
        if self.isVisible():
            self.load()

    def reload_recall_marks(self) -> None:
        """Read the semantic-recall marks of the drawn timeline again (the semanticRecall options changed)."""
        if self._drawn.timeline is not None:
            self.recall_marks.load(self._drawn.timeline, helper=self.use_helper)

    def leave_other_threads(self, thread_id: str) -> None:
        """Stop a What-if replay of a thread other than THREAD_ID (the thread the window turns to).

        In the helper process a long replay would hold up every read of the new thread (its detail,
        messages and timeline) until it ended.
        """
        if self._drawn.timeline is not None and self._drawn.timeline.thread_id != thread_id:
            self._runner.cancel("whatif")

    def load(self) -> None:
        """Read the wanted thread's timeline in the background (superseding an earlier read)."""
        detail = self._detail
        if detail is None or detail.record is None:
            return
        thread_id = detail.thread.id
        key = (thread_id, detail.record.id, detail.record.get("updatedAt"), detail.message_count)
        self._wanted = None
        if self._drawn.timeline is None or self._drawn.timeline.thread_id != thread_id:
            self._show_message("Reading the timeline…")
        self._runner.submit_call(load_timeline_chart, thread_id, helper=self.use_helper,
                                 on_done=lambda loaded: self._on_timeline_loaded(*loaded, key),
                                 on_error=self._on_timeline_failed, key="timeline")

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._wanted is not None:
            self.load()

    @property
    def drawing(self) -> bool:
        """Return whether the chart is still being drawn (a long thread's items go in over a few turns of the event
        loop)."""
        return self.chart.drawing or self._unshown is not None

    # -- loading -------------------------------------------------------------------------------

    def _show_message(self, text: str) -> None:
        if self.chart.drawing:
            self.chart.clear()   # drop a long timeline's steps still to come
        self._unshown = None
        self.plot.setUpdatesEnabled(True)
        self._message.setText(text)
        self._stack.setCurrentIndex(0)

    def _on_timeline_loaded(self, timeline: Timeline, series: ChartSeries, key: tuple) -> None:
        if self._detail is None or timeline.thread_id != self._detail.thread.id:
            return
        same_thread = self._drawn.timeline is not None and self._drawn.timeline.thread_id == timeline.thread_id
        self._drawn.timeline, self._drawn.series, self._loaded_for = timeline, series, key
        self.pointer.timeline_changed(same_thread=same_thread)
        if not same_thread:
            self._drawn.whatif = self._drawn.whatif_series = None
        self.whatif_panel.set_timeline(timeline, keep=same_thread, series=series)
        self.recall_marks.load(timeline, helper=self.use_helper)
        self._offer_whatif(timeline)
        if not self.chart.is_long(series):
            held = self._unshown = _HeldDraw(timeline, announce=True)
            self._stack.setCurrentIndex(1)
            self._redraw()
            self._fit()
            self._show_held(held)
            return
        # In one go, delivery, drawing, fitting and the first paint held the GUI thread 40-60 ms on the
        # 20,007-message thread: drawn in steps, out of sight.
        self._draw_held(announce=True)

    def _offer_whatif(self, timeline: Timeline) -> None:
        """Turn What-if off for a thread holding a message Mastra cannot count: no replay exists (tooltip: why)."""
        if timeline.uncountable is not None:
            self.whatif_button.setChecked(False)
        self.whatif_button.setEnabled(timeline.uncountable is None)
        self.whatif_button.setToolTip(WHATIF_TIP if timeline.uncountable is None
                                      else fmt.plain_tooltip(no_replay_sentence(timeline)))

    def _draw_held(self, *, announce: bool) -> None:
        """Draw the long timeline anew out of sight, then fit and show it in a turn of the event loop of its own.

        Its items go in one per turn (`TimelineChart.draw`) while the page shows what it showed ("Reading
        the timeline…", or the previous picture, its updates held). ANNOUNCE: emit `timeline_loaded` once
        shown (a timeline newly read, not an axis switch). A later held drawing supersedes this one (and
        announces if either does). A drawing started meanwhile (Show menu, a What-if replay drawn) drops the
        steps still to come and draws anew: whichever ends last shows the held picture (`_on_overlay_drawn`).
        """
        announce = announce or (self._unshown is not None and self._unshown.announce)
        self._unshown = _HeldDraw(self._drawn.timeline, announce)
        self._redraw()

    def _on_drawn(self, held: _HeldDraw) -> None:
        """Fit HELD's chart once all of it is drawn, and show it in the next turn of the event loop.

        Fitting decimates the curves for the new view (a few ms on the 20,007-message thread) and the
        first paint strokes them all: in one turn they made the longest stretch of an axis switch.
        Nothing happens when another drawing or timeline came meanwhile (a drawing started since shows
        HELD when it ends).
        """
        if held is not self._unshown or held.timeline is not self._drawn.timeline or self.chart.drawing:
            return
        self._fit()
        QTimer.singleShot(0, self, functools.partial(self._show_held, held))

    def _show_held(self, held: _HeldDraw) -> None:
        """Show HELD's drawn and fitted chart (its paint follows), and announce it if asked."""
        if held is not self._unshown or held.timeline is not self._drawn.timeline or self.chart.drawing:
            return
        self._unshown = None
        self._stack.setCurrentIndex(1)
        self.plot.setUpdatesEnabled(True)
        if held.announce:
            self.timeline_loaded.emit(held.timeline)

    def _on_timeline_failed(self, exc: Exception) -> None:
        self._drawn.timeline = self._drawn.series = None
        self._show_message(f"The timeline could not be built.\n\n{fmt.read_failure(exc)}")

    def _on_whatif_panel_result_ready(self, result: WhatIfChart) -> None:
        if self._drawn.timeline is None or result.thread_id != self._drawn.timeline.thread_id:
            return
        if not self.whatif_button.isChecked():
            return  # turned off while it ran
        self._drawn.whatif, self._drawn.whatif_series = result, self.whatif_panel.series
        self._announced = None   # announced once its overlay is drawn
        self._draw_overlay()

    def _on_whatif_panel_cleared(self) -> None:
        self._drawn.whatif = self._drawn.whatif_series = None
        self._draw_overlay()

    # -- drawing -------------------------------------------------------------------------------

    def _redraw(self, *_args, done=None) -> None:
        """Draw the timeline (and the replay) from their prepared arrays: no loop over the points here.

        DONE is called once the real series and the overlay are drawn (a long thread's over a few turns
        of the event loop, see `TimelineChart.draw`).
        """
        tl, series = self._drawn.timeline, self._drawn.series
        if tl is None or series is None:
            self.chart.clear()
            self.legend.set_curves([])
            return
        keep = self.pointer.items() + self.recall_marks.items()
        # resource scope replays every thread of the resource: its turns are the resource's, not this thread's
        self.chart.turn_label = "turn (all threads of the resource)" if tl.scope == "resource" else "turn"
        if self.chart.is_long(series):
            # drawn over a few turns of the event loop: painted once, when all of it is there
            self.plot.setUpdatesEnabled(False)
        self.chart.draw(series, tl.events, self._drawn.x_mode, buffered=self.show_buffered.isChecked(),
                        thresholds=self.show_thresholds.isChecked(), keep=tuple(keep),
                        done=functools.partial(self._draw_overlay, done or self._on_redrawn))
        self.pointer.place_selection()
        self.recall_marks.place()
        n_recon = int(np.count_nonzero(np.isfinite(series.y["reconstructed"])))
        shown = [e for e in tl.events if e.kind != THREAD_UPDATE]
        inferred = sum(1 for e in shown if e.inferred)
        text = (f"{len(shown)} OM event{'s' if len(shown) != 1 else ''} "
                f"({inferred} inferred from the generation log) · {len(series):,} points, {n_recon:,} reconstructed"
                f" · {tl.scope} scope, generation\u00a0{tl.generations[-1].generation_count}")
        if tl.scope == "resource":
            text += " · the other threads' context is not replayed (estimate)"
        if tl.uncountable is not None:   # the series stops before that message: say why first
            text = f"{UNCOUNTABLE_MARK} The series ends here: {uncountable_sentence(tl.uncountable)}. {text}"
        self.summary.setText(text)
        self.summary.setToolTip(fmt.plain_tooltip(text))

    def _draw_overlay(self, done=None) -> None:
        """Draw the What-if replay over the chart, or remove it (only the overlay's items change).

        A long replay's overlay goes in an item per turn of the event loop; once it is all there the
        curve legend follows, `whatif_drawn` is emitted for a replay not yet announced, and DONE is
        called. While the real series is still being drawn this waits: that draw ends here.
        """
        if self._drawn.series is None or self.chart.pending("real"):
            return
        whatif = self._drawn.whatif if self._drawn.whatif_series is not None else None
        self.chart.draw_overlay(self._drawn.whatif_series if whatif is not None else None,
                                whatif.n_events if whatif is not None else None, self._drawn.series,
                                thresholds=self.show_thresholds.isChecked(),
                                done=functools.partial(self._on_overlay_drawn, done))

    def _on_redrawn(self) -> None:
        if self._unshown is None:   # a held drawing is fitted first, then shown (`_on_drawn`)
            self.plot.setUpdatesEnabled(True)

    def _on_overlay_drawn(self, done=None) -> None:
        self._fit_legend()
        drawn = self._drawn.whatif
        if drawn is not None and drawn is not self._announced:
            self._announced = drawn
            self.whatif_drawn.emit(drawn)
        if done is not None:
            done()
        if self._unshown is not None and not self.chart.drawing:
            # the drawing held out of sight is all there: fitted and shown (painted) in a turn of its own
            QTimer.singleShot(0, self, functools.partial(self._on_drawn, self._unshown))

    def _fit_legend(self) -> None:
        """Name the curves drawn now in the legend under the chart."""
        self.legend.set_curves(self.chart.curves() + self.recall_marks.legend())

    def _fit(self) -> None:
        """Show everything, with a little room above the data."""
        shown = [x for x in (self._drawn.series, self._drawn.whatif_series) if x is not None]
        self.chart.fit(shown, self._drawn.x_mode)

    # -- slots ---------------------------------------------------------------------------------

    def _on_x_combo_current_index_changed(self, index: int) -> None:
        self._drawn.x_mode = X_MODES[index] if 0 <= index < len(X_MODES) else "time"
        if self._drawn.series is None:
            return
        if self.drawing or self.chart.is_long(self._drawn.series):
            # Every curve and marker group of the 20,007-message thread given its other x array in one turn
            # of the event loop stalled the GUI thread 30-97 ms: drawn anew in steps, the old picture held.
            self._draw_held(announce=False)
            return
        self.chart.set_mode(self._drawn.x_mode)  # the same items, other x arrays
        self.pointer.place_selection()
        self.recall_marks.place()
        self._fit()

    def _on_reset_button_clicked(self) -> None:
        self._fit()

    def _on_scene_mouse_moved(self, args) -> None:
        if not self.drawing:   # while a long chart is drawn anew the picture shown is the old one (another x axis)
            self.pointer.move_to(args[0])

    def _on_scene_mouse_clicked(self, ev) -> None:
        if not self.drawing:
            self.pointer.click(ev)

    def _on_whatif_button_toggled(self, checked: bool) -> None:
        """Open the What-if panel and replay (on), or close it and remove the overlay (off)."""
        if checked and self.width() >= NARROW_WIDTH:
            self._show_panel()
        else:
            self.whatif_scroll.setVisible(False)
        self.whatif_panel.set_active(checked)
        if not checked and self._drawn.whatif is not None:
            self._drawn.whatif = self._drawn.whatif_series = None
            self._draw_overlay()

    def resizeEvent(self, event) -> None:
        """Fold the What-if panel away while the tab is too narrow for it and the chart (the replay stays drawn)."""
        super().resizeEvent(event)
        wide = event.size().width() >= NARROW_WIDTH
        if self.whatif_button.isChecked() and wide != self.whatif_scroll.isVisible():
            self.whatif_scroll.setVisible(wide)
        if wide and self.whatif_scroll.isVisible() and self.whatif_scroll.width() < 0.9 * self._panel_width():
            QTimer.singleShot(0, self, self._place_panel)  # squeezed by a smaller window: give it its room back

    def _show_panel(self) -> None:
        """Show the What-if panel at its width in one layout pass.

        The splitter gets its sizes in the same turn of the event loop as the panel is shown: laid out
        first at the splitter's own choice and placed a turn later, the window was laid out and the
        chart painted twice (~20 ms of GUI thread on the 20,007-message thread).
        """
        width = self.splitter.width()
        panel = self._panel_width()
        self.whatif_scroll.setVisible(True)
        self.splitter.setSizes([max(width - panel, 1), panel])

    def _place_panel(self) -> None:
        """Give the What-if panel the room it asks for, at most 45% of the tab."""
        if not self.whatif_scroll.isVisible():
            return
        width = self.splitter.width()
        panel = self._panel_width()
        self.splitter.setSizes([max(width - panel, 1), panel])

    def _panel_width(self) -> int:
        """Return the What-if panel's width: what it asks for, at most 45% of the tab (px)."""
        scrollbar = self.whatif_scroll.verticalScrollBar().sizeHint().width()
        return min(self.whatif_panel.sizeHint().width() + scrollbar + 4, int(self.splitter.width() * 0.45))

    # -- export --------------------------------------------------------------------------------

    def _write_csv(self, path: str) -> None:
        """Write the real (and what-if) series as CSV to PATH (UTF-8; nothing without a timeline); raise OSError if it
        cannot."""
        drawn = self._drawn
        if drawn.timeline is None:
            return
        text = series_csv(drawn.timeline, drawn.whatif.points if drawn.whatif else None)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)

    def _export_default_name(self, kind: str) -> str:
        name = (self._drawn.timeline.thread_id or "timeline") if self._drawn.timeline else "timeline"
        return f"{name}-timeline.{kind}"
