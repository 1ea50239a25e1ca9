"""What-if on the Timeline: off until asked, removable, explained markers, and no crash on a degenerate thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyqtgraph as pg
import pytest

from studio.engine.events import OBSERVATION
from studio.ui.widgets.timeline_chart import MARKER_LEGEND, MARKERS

REPO = Path(__file__).resolve().parents[2]

#: Run in a child process, so that a segmentation fault fails the test instead of ending the run.
DEGENERATE_SCRIPT = r"""
import json, sys, time
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings
from studio.ui.app import application
from studio.ui.context import AppContext
from studio.ui.widgets.main_window import MainWindow
from tests.degenerate import THREAD, make_degenerate_db

app = application()
work = Path(sys.argv[1])
ctx = AppContext(settings=QSettings(str(work / "s.ini"), QSettings.Format.IniFormat))
window = MainWindow(ctx)
window.resize(1400, 900)
window.show()
window.open_database(str(make_degenerate_db(work / "db")), thread_id=THREAD, tab="timeline")
assert ctx.runner.wait_idle()
tab = window.thread_view.timeline_tab
tab.whatif_button.setChecked(True)          # the stored settings' replay
assert ctx.runner.wait_idle()
stored = tab.whatif
panel = tab.whatif_panel
panel.refl_ratio.setValue(5.0)              # then what a user types: a Reflector that writes 5x what it reads,
panel.observation_tokens.setValue(300)      # with low thresholds, so that it reflects nearly every turn
panel.message_tokens.setValue(500)
panel.run()
assert ctx.runner.wait_idle()
for _ in range(5):
    app.processEvents()
tab.plot.viewport().repaint()
curves = tab.plot.getPlotItem().listDataItems()
print(json.dumps({
    "stored_drawn": stored is not None and stored.uses_real_sizes,
    "drawn": tab.whatif is not None and tab.whatif.settings.observation_tokens == 300,
    "reflections": tab.whatif.count("reflection") if tab.whatif else 0,
    "peak_log": max(p.observation_tokens for p in tab.whatif.points) if tab.whatif else None,
    "dtypes": sorted({str(c.getData()[1].dtype) for c in curves if c.getData()[1] is not None}),
}))
window.close()
ctx.runner.shutdown()
"""


def test_a_degenerate_thread_replays_without_crashing(tmp_path):
    """Before the fix each modelled reflection multiplied the log by the ratio: the replay's log passed
    2**64 tokens, Python integers reached pyqtgraph as an object array and the process died (SIGSEGV)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-X", "faulthandler", "-c", DEGENERATE_SCRIPT, str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["stored_drawn"] and report["drawn"]
    assert report["reflections"] > 10
    assert report["peak_log"] < 2**53   # a reflection never grows the modelled log
    assert report["dtypes"] == ["float64"]


def test_whatif_is_off_until_asked_and_off_removes_the_overlay(studio, fixture_db, studio_ctx, qtbot):
    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    assert tab.timeline is not None
    # off: no replay ran, the panel is folded and the chart has the tab's width
    assert not tab.whatif_button.isChecked() and tab.whatif is None and tab.whatif_panel.result is None
    assert not tab.whatif_scroll.isVisible()
    assert tab.plot.width() >= tab.splitter.width() - 30

    def names() -> list[str]:
        return [item.name() for item in tab.plot.getPlotItem().listDataItems() if item.name()]

    assert not any(name.startswith("What-if") for name in names())
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000) as blocker:
        tab.whatif_button.setChecked(True)
    assert blocker.args[0] is tab.whatif and tab.whatif.uses_real_sizes
    assert tab.whatif_scroll.isVisible() and tab.plot.width() < tab.splitter.width() - 100
    qtbot.wait(50)  # the panel is placed once the splitter has laid it out
    assert tab.whatif_scroll.width() >= 0.9 * tab._panel_width()   # the chart's legend does not squeeze it
    assert "What-if window (estimate)" in names()
    # the What-if log is drawn opaque, in the colour #0f766e at alpha 150 shows on the white chart
    # (255 - (255 - c) * 150 / 255 per channel: a translucent wide pen makes every paint ~20 ms slower)
    log = next(item for item in tab.plot.getPlotItem().listDataItems() if item.name() == "What-if log (estimate)")
    colour = log.opts["pen"].color()
    assert colour.alpha() == 255
    assert (colour.red(), colour.green(), colour.blue()) == tuple(
        round(255 - (255 - c) * 150 / 255) for c in (0x0F, 0x76, 0x6E))
    tab.whatif_button.setChecked(False)
    assert studio_ctx.runner.wait_idle()
    assert tab.whatif is None and not tab.whatif_scroll.isVisible()
    assert not any(name.startswith("What-if") for name in names())
    # changing a setting while off replays nothing
    tab.whatif_panel.message_tokens.setValue(1200)
    qtbot.wait(400)  # longer than the panel's debounce
    assert studio_ctx.runner.wait_idle() and tab.whatif is None


@pytest.mark.parametrize("size", [(1024, 700), (1400, 900)])
def test_the_panel_opens_at_its_width_in_one_layout(fixture_db, studio_ctx, qtbot, size):
    """Shown at the splitter's own choice and placed a turn of the event loop later, the panel made Qt
    lay out the window and paint the chart twice as What-if turned on. Its width is set as it is shown:
    before any event is processed the splitter already gives it the room it asks for."""
    from studio.ui.widgets.main_window import MainWindow

    window = MainWindow(studio_ctx)
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    window.open_database(str(fixture_db("support")), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    qtbot.wait(20)
    tab = window.thread_view.timeline_tab
    total = sum(tab.splitter.sizes())
    tab.whatif_button.setChecked(True)           # no event processed from here to the asserts
    chart, panel = tab.splitter.sizes()
    assert tab.whatif_scroll.isVisibleTo(tab)
    assert panel >= 0.9 * tab._panel_width() and chart + panel <= total
    assert chart >= 0.5 * total                  # the chart keeps most of the tab
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
        pass
    assert abs(tab.splitter.sizes()[1] - panel) <= 8   # no second placement once laid out
    assert tab.whatif_panel.width() <= tab.whatif_scroll.viewport().width()


def test_the_marker_shapes_are_explained(studio, fixture_db, studio_ctx):
    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    legend = window.thread_view.timeline_tab.marker_legend
    assert legend.isVisible()
    shown = {text for text, _key in MARKER_LEGEND}
    assert set(legend.entries) == shown
    # every kind the chart marks has its shape in the legend
    symbols = {MARKERS[key][0] for _text, key in MARKER_LEGEND if key in MARKERS}
    assert {symbol for symbol, _c, _s in MARKERS.values()} <= symbols
    assert MARKERS[OBSERVATION][0] == "o"


def test_markers_carry_their_event_for_tooltips_and_clicks(studio, fixture_db, studio_ctx, qtbot):
    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
        tab.whatif_button.setChecked(True)
    real, whatif = [], []
    for scatter in tab.chart.spots:
        for data in scatter.data["data"]:
            (whatif if int(data) < 0 else real).append(int(data))
    # one marker per event, real and replayed
    assert sorted(real) == sorted(set(real)) and len(real) == len(tab.timeline.events)
    assert sorted(-d - 1 for d in whatif) == list(range(len(tab.whatif.events)))
    reflection = next(i for i, e in enumerate(tab.timeline.events) if e.kind == "reflection")
    assert "'>Reflection" in tab.pointer.spot_tip(0, 0, reflection)   # a plain-text tooltip
    assert "'>What-if (estimate): Observation" in tab.pointer.spot_tip(0, 0, -1)


def test_the_chart_draws_edge_values_in_both_modes(qtbot, studio_ctx):
    """Times at the calendar's edges, a point without a time, a value beyond 64 bits, a negative one."""
    from studio.engine.timeline import Point
    from studio.engine.timeline_series import PLOT_LIMIT, ChartSeries
    from studio.ui.widgets.timeline_tab import TimelineTab

    tab = TimelineTab(studio_ctx.runner)
    qtbot.addWidget(tab)
    tab.resize(900, 600)
    tab.show()
    rows = [(-62135596800000, 1, 5), (None, 1, 10**30), (253402300799000, 2, -5), (253402300799000, 2, 7)]
    points = [Point(at=None, at_ms=ms, turn=turn, message_tokens=v, observation_tokens=v, buffered_tokens=0,
                    threshold=100, reflection_threshold=50, reconstructed=False) for ms, turn, v in rows]
    series = ChartSeries.from_points(points, [])
    assert series.y["message"][1] == PLOT_LIMIT
    for mode in ("time", "turn"):
        tab.chart.draw(series, [], mode, buffered=True, thresholds=True)
        tab.chart.fit([series], mode)
        tab.plot.viewport().repaint()
        drawn = tab.plot.getPlotItem().listDataItems()[0].getData()
        assert drawn[0].dtype == np.float64 and np.isfinite(drawn[0]).all()


def test_whatif_table_peaks_are_the_charts_and_the_note_names_differences(studio, fixture_db, studio_ctx, qtbot):
    """The peak rows of both columns are the drawn curves' own highest points (`ChartSeries.peaks`);
    the note says the stored settings retrace the real run only when every row and the agent's peak
    agree, names what differs otherwise, and gives what the agent got after step 0 in one sentence.
    Before, the Real column read 2,429 / 3,281 on support-1 while the chart reached 3,083 / 3,519."""
    from studio.app import text as fmt
    from studio.app.timeline import thread_timeline, whatif_document
    from studio.store import open_store
    from studio.ui.widgets.whatif_panel import ROWS

    path = fixture_db("support")
    window = studio(path, thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
        tab.whatif_button.setChecked(True)
    panel = tab.whatif_panel

    def cell(name: str, col: int = 1) -> str:
        return panel.table.item(ROWS.index(name), col).text()

    real = tab._drawn.series.peaks
    assert (cell("Peak window", 0), cell("Peak window + log", 0)) == (fmt.tokens(3083), fmt.tokens(3519))
    assert (real.message_tokens, real.context_tokens) == (3083, 3519)
    assert all(cell(name, 0) == cell(name, 1) or name == "Reflector calls" for name in ROWS)
    note = panel.note.text()
    assert "retraces the real run" in note and "differs" not in note
    assert "the agent got at most 2,825 tokens of message window and 3,281 of window + log" in note
    assert "(2,825 and 3,281 in the real run)" in note
    for message_tokens, observation_tokens in [(1000, 400), (2500, 550)]:
        with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
            panel.message_tokens.setValue(message_tokens)
            panel.observation_tokens.setValue(observation_tokens)
        assert studio_ctx.runner.wait_idle()
        with open_store(path) as store, store.snapshot():
            timeline = thread_timeline(store, "support-1")
        doc = whatif_document(timeline, message_tokens=message_tokens, observation_tokens=observation_tokens)
        drawn = panel.series.peaks
        assert cell("Peak window + log") == fmt.tokens(drawn.context_tokens)
        assert cell("Peak window") == fmt.tokens(drawn.message_tokens)
        assert drawn.context_tokens >= doc["peak_context_tokens"] >= doc["peak_message_tokens"]
        assert f"at most {doc['peak_message_tokens']:,} tokens of message window" in panel.note.text()
        assert "retraces" not in panel.note.text()


def test_the_note_names_each_difference():
    from studio.engine.timeline_series import Peaks
    from studio.ui.widgets.whatif_panel import ROWS, differences

    real = dict.fromkeys(ROWS, "1")
    real["Reflector calls"] = "≥ 3"
    same = {**real, "Reflector calls": "4"}   # retries are not recorded: 4 calls agree with "≥ 3"
    assert differences(real, same, Peaks(10, 5), Peaks(10, 5)) == []
    other = {**same, "Observations": "2", "Reflector calls": "2"}
    assert differences(real, other, Peaks(3281, 2429), Peaks(3281, 2825)) == [
        "Reflector calls ≥ 3 real vs 2 replayed", "Observations 1 real vs 2 replayed",
        "the agent's largest window 2,429 real vs 2,825 replayed"]


@pytest.mark.parametrize("size", [(1400, 900), (1024, 700)])
def test_the_curve_legend_sits_under_the_chart_and_the_panel_fits(fixture_db, studio_ctx, qtbot, size):
    """Drawn over the plot, the legend's nine entries covered the data (one column) or were cut (two
    columns) once What-if took its room; and at 1024x700 the panel was wider than its column (cut, and a
    horizontal scroll bar)."""
    from studio.ui.widgets.main_window import MainWindow

    window = MainWindow(studio_ctx)   # first shown at SIZE, as a window the user opens at that size
    qtbot.addWidget(window)
    window.resize(*size)
    window.show()
    window.open_database(str(fixture_db("support")), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
        tab.whatif_button.setChecked(True)
    panel = tab.whatif_panel
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):   # other thresholds: What-if's own lines too
        panel.message_tokens.setValue(1800)
        panel.observation_tokens.setValue(700)
        panel.run()
    qtbot.wait(50)
    assert studio_ctx.runner.wait_idle()
    named = [item.name() for item in tab.plot.getPlotItem().listDataItems() if item.name()]
    assert list(tab.legend.entries) == named and "What-if thresholds" in named
    assert tab.plot.getPlotItem().legend is None                       # nothing drawn over the data
    assert tab.legend.geometry().top() >= tab.plot.geometry().bottom()
    for text, label in tab.legend.entries.items():
        assert label.fontMetrics().horizontalAdvance(text) <= label.width(), text
    scroll = tab.whatif_scroll
    assert scroll.isVisible()
    assert panel.minimumSizeHint().width() <= scroll.viewport().width()
    assert panel.width() <= scroll.viewport().width()


def test_a_long_overlay_is_drawn_in_steps_and_a_newer_one_replaces_it(studio, fixture_db, studio_ctx, qtbot,
                                                                       monkeypatch):
    """A 20,000-point overlay drawn at once kept the GUI thread ~50 ms: long ones go an item per turn of the
    event loop (here every overlay counts as long), and a redraw meanwhile drops the steps still to come."""
    from studio.ui.widgets import timeline_chart

    monkeypatch.setattr(timeline_chart, "PROGRESSIVE_MIN_POINTS", 0)
    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    assert studio_ctx.runner.wait_idle()
    tab = window.thread_view.timeline_tab

    def whatif_items() -> list:
        return [i for i in tab.plot.getPlotItem().items if i in [entry[0] for entry in tab.chart._layers["whatif"]]]

    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000) as blocker:
        tab.whatif_button.setChecked(True)
    drawn = blocker.args[0]
    complete = len(whatif_items())
    assert complete == 2 + len(drawn.series.marker_groups())   # window, log, one scatter per marker look
    tab.chart.draw_overlay(drawn.series, drawn.n_events, tab._drawn.series, thresholds=True)
    assert len(whatif_items()) == 1                            # the first step only, so far
    tab._redraw()                                              # a redraw (new axis, Show menu) meanwhile
    qtbot.waitUntil(lambda: len(whatif_items()) == complete, timeout=30_000)
    qtbot.wait(50)
    assert len(whatif_items()) == complete                     # the dropped steps added nothing twice
    names = [item.name() for item in tab.plot.getPlotItem().listDataItems() if item.name()]
    assert names.count("What-if window (estimate)") == 1 and list(tab.legend.entries) == names


def test_a_long_timeline_is_drawn_out_of_sight_then_shown_whole(studio, fixture_db, studio_ctx, qtbot, monkeypatch):
    """On the 20,007-message thread delivery, drawing, fitting and the first paint in one go held the GUI
    thread 40-60 ms: a long timeline (here every one counts as long) is drawn an item per turn of the event
    loop while the page still shows its message, and shown once whole, with the same items as at once."""
    from studio.ui.widgets import timeline_chart

    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    tab = window.thread_view.timeline_tab
    at_once = [(item.name(), item.getData()[1].tolist()) for item in tab.plot.getPlotItem().listDataItems()]
    monkeypatch.setattr(timeline_chart, "PROGRESSIVE_MIN_POINTS", 0)
    loaded = []
    tab.timeline_loaded.connect(loaded.append)
    series, timeline = tab._drawn.series, tab.timeline
    tab._drawn.timeline = None                    # as a thread read anew
    tab._show_message("Reading the timeline…")
    tab._on_timeline_loaded(timeline, series, tab._loaded_for)
    assert tab.drawing and tab._stack.currentIndex() == 0 and not loaded
    qtbot.waitUntil(lambda: not tab.drawing, timeout=30_000)
    assert tab._stack.currentIndex() == 1 and loaded == [timeline] and tab.plot.updatesEnabled()
    drawn = [(item.name(), item.getData()[1].tolist()) for item in tab.plot.getPlotItem().listDataItems()]
    assert [name for name, _y in drawn] == [name for name, _y in at_once]
    assert all(np.array_equal(a, b, equal_nan=True) for (_n, a), (_m, b) in zip(drawn, at_once, strict=True))


def _drawn_items(tab) -> list[tuple]:
    """Return what the chart shows: each curve's (name, x, y) and each marker group's (symbol, x, y), in order."""
    out = []
    for item in tab.plot.getPlotItem().items:
        if isinstance(item, pg.PlotDataItem):
            x, y = item.getOriginalDataset()
            out.append(("curve", item.name(), x.tolist(), y.tolist()))
        elif isinstance(item, pg.ScatterPlotItem):
            x, y = item.getData()
            out.append(("markers", item.opts["symbol"], x.tolist(), y.tolist()))
    return out


def _same(a: list[tuple], b: list[tuple]) -> bool:
    return len(a) == len(b) and all(
        p[:2] == q[:2] and np.array_equal(p[2], q[2], equal_nan=True) and np.array_equal(p[3], q[3], equal_nan=True)
        for p, q in zip(a, b, strict=True))


def test_a_long_timeline_switches_its_axis_in_steps_behind_the_old_picture(studio, fixture_db, studio_ctx, qtbot,
                                                                          monkeypatch):
    """On the 20,007-message thread every curve and marker group given its other x array in one turn of the
    event loop stalled the GUI thread 30-97 ms. A long timeline (here every one counts as long) switches its
    axis an item per turn while the old picture stays, its updates held; once all is there it is fitted and
    shown, with the same items and view as a switch at once; a switch back meanwhile drops the steps to come."""
    from studio.ui.widgets import timeline_chart

    window = studio(fixture_db("support"), thread_id="support-1", tab="timeline")
    tab = window.thread_view.timeline_tab
    with qtbot.waitSignal(tab.whatif_drawn, timeout=10000):
        tab.whatif_button.setChecked(True)           # the overlay switches too
    assert studio_ctx.runner.wait_idle()
    box = tab.plot.getPlotItem().getViewBox()
    at_once = {}
    for mode in ("time", "turn"):                    # a short timeline: switched at once, as before
        tab.set_x_mode(mode)
        assert not tab.drawing
        at_once[mode] = (_drawn_items(tab), box.viewRange())
    assert not _same(at_once["time"][0], at_once["turn"][0])
    monkeypatch.setattr(timeline_chart, "PROGRESSIVE_MIN_POINTS", 0)
    loaded = []
    tab.timeline_loaded.connect(loaded.append)
    n_items = len(at_once["time"][0])

    tab.set_x_mode("time")
    assert tab.x_mode == "time" and tab.drawing and not tab.plot.updatesEnabled()   # the old picture, held
    assert len(_drawn_items(tab)) == 1                                              # the first step only, so far
    qtbot.waitUntil(lambda: not tab.drawing, timeout=30_000)
    assert tab.plot.updatesEnabled() and tab._stack.currentIndex() == 1
    assert _same(_drawn_items(tab), at_once["time"][0]) and box.viewRange() == at_once["time"][1]
    assert isinstance(tab.plot.getPlotItem().getAxis("bottom"), pg.DateAxisItem)

    for mode in ("turn", "time", "turn"):            # and back and forth before a drawing ends
        tab.set_x_mode(mode)
        assert len(_drawn_items(tab)) == 1
    qtbot.waitUntil(lambda: not tab.drawing, timeout=30_000)
    qtbot.wait(50)
    assert len(_drawn_items(tab)) == n_items                                        # nothing drawn twice
    assert _same(_drawn_items(tab), at_once["turn"][0]) and box.viewRange() == at_once["turn"][1]
    assert loaded == [] and tab.plot.updatesEnabled()       # an axis switch is no new timeline
