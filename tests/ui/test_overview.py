"""The Overview window: every OM thread by its two ratios, loaded off the GUI thread, click to open."""

from __future__ import annotations

import pytest

from studio.engine.status import compute_status
from studio.store import open_store
from studio.ui.style import NEAR_RATIO
from studio.ui.widgets.overview import STATES, entry_text, thread_state
from tests.conftest import load_oracle
from tests.oracle_facts import threads


def expected_state(status: dict) -> str:
    """Return the Overview state of a thread from Mastra's getStatus figures (its oracle): the most urgent of
    over both thresholds, should observe, should reflect, near one (NEAR_RATIO of it), buffered chunks, ok
    (the fixtures leave no live busy flag)."""
    message = status["pendingTokens"] / status["threshold"]
    observation = status["observationTokenCount"] / status["effectiveObservationTokensThreshold"]
    observe, reflect = status["shouldObserve"], status["shouldReflect"]
    if observe or reflect:
        return "both" if observe and reflect else "observe" if observe else "reflect"
    if max(message, observation) >= NEAR_RATIO:
        return "near"
    return "buffered" if status["bufferedChunkCount"] else "ok"


def _overview(studio, fixture_db, studio_ctx, qtbot, name="support"):
    window = studio(fixture_db(name))
    overview = window.dialogs.show_overview()
    qtbot.waitUntil(lambda: overview.finished, timeout=20000)
    assert studio_ctx.runner.wait_idle()
    return window, overview


@pytest.mark.parametrize("name", ["support", "resource"])   # resource: threads near the message threshold
def test_overview_places_every_om_thread_by_mastras_ratios(studio, fixture_db, studio_ctx, qtbot, name):
    _window, overview = _overview(studio, fixture_db, studio_ctx, qtbot, name)
    oracle = load_oracle(name)
    expected = {tid: st for rec in oracle["om"].values() for tid, st in rec["status"].items()}
    got = {e.thread.id: e for e in overview.entries}
    assert set(got) == set(expected)
    for thread_id, status in expected.items():
        entry = got[thread_id]
        assert entry.x == status["pendingTokens"] / status["threshold"]
        assert entry.y == status["observationTokenCount"] / status["effectiveObservationTokensThreshold"]
        assert entry.state == expected_state(status), thread_id
    assert sum(len(s.points()) for s in overview.scatters.values()) == len(expected)
    without = len(threads(name)) - len(expected)
    assert f"{len(expected)} threads with OM" in overview.summary.text()
    assert (f"{without} without OM" in overview.summary.text()) == bool(without)
    assert not overview.progress.isVisible()


def test_clicking_a_point_opens_the_thread(studio, fixture_db, studio_ctx, qtbot):
    window, overview = _overview(studio, fixture_db, studio_ctx, qtbot)
    scatter = overview.scatters["ok"]
    spot = next(p for p in scatter.points() if overview.entries[p.data()].thread.id == "support-3")
    with qtbot.waitSignal(overview.thread_requested, timeout=30_000) as blocker:
        overview._on_scatter_clicked(scatter, [spot])
    assert blocker.args == ["support-3"]
    assert studio_ctx.runner.wait_idle()
    assert window.current_thread_id == "support-3"
    assert "support-3" in overview._tip(0, 0, spot.data())


def test_states_and_exports(studio, fixture_db, studio_ctx, qtbot, tmp_path):
    _window, overview = _overview(studio, fixture_db, studio_ctx, qtbot, "buffered")
    entry = overview.entries[0]
    chunks = load_oracle("buffered")["om"]["thread:long-run"]["status"]["long-run"]["bufferedChunkCount"]
    assert chunks, "the buffered fixture's long-run has no pending buffered chunk"
    assert entry.state in STATES and entry.status.buffered_chunk_count == chunks
    assert "buffered chunk" in entry_text(entry)
    png, svg, csv_path = tmp_path / "o.png", tmp_path / "o.svg", tmp_path / "o.csv"
    overview.exporter.write_png(str(png), width=600)
    overview.exporter.write_svg(str(svg))
    overview.exporter.write_csv(str(csv_path))
    assert png.read_bytes()[:4] == b"\x89PNG" and "<svg" in svg.read_text(encoding="utf-8")
    rows = csv_path.read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("thread_id,") and rows[1].startswith("long-run,user-dana,")


def test_export_menu_asks_where_writes_and_says_what_happened(studio, fixture_db, studio_ctx, qtbot, tmp_path,
                                                              monkeypatch):
    from studio.ui.widgets import chart_export

    _window, overview = _overview(studio, fixture_db, studio_ctx, qtbot, "buffered")
    answer = tmp_path / "chosen.csv"
    monkeypatch.setattr(chart_export, "ask_export_path", lambda _parent, kind, name: str(answer))
    overview.exporter.export("csv")
    assert answer.read_text(encoding="utf-8").startswith("thread_id,")
    assert overview.statusBar().currentMessage() == f"Exported {answer}"
    answer = tmp_path / "no-such-folder" / "o.csv"
    overview.exporter.export("csv")
    assert overview.statusBar().currentMessage().startswith("Export failed: ")


def test_thread_state_is_most_urgent_first(fixture_db):
    with open_store(fixture_db("support")) as store:
        status = compute_status(store, "support-2")
    assert thread_state(status) == "ok"
    status.should_observe = True
    assert thread_state(status) == "observe"
    status.should_reflect = True
    assert thread_state(status) == "both"
    status.should_observe = False
    assert thread_state(status) == "reflect"


def test_overview_follows_file_open_and_closes_with_esc_and_ctrl_w(studio, fixture_db, studio_ctx, qtbot):
    from PySide6.QtCore import Qt

    window, overview = _overview(studio, fixture_db, studio_ctx, qtbot)
    support = window.database_path
    assert support in overview.windowTitle()
    other = str(fixture_db("buffered"))
    window.open_database(other)
    assert studio_ctx.runner.wait_idle()
    qtbot.waitUntil(lambda: overview.finished, timeout=20000)
    assert studio_ctx.runner.wait_idle()
    assert other in overview.windowTitle() and support not in overview.windowTitle()
    oracle = load_oracle("buffered")
    assert {e.thread.id for e in overview.entries} == {t for rec in oracle["om"].values() for t in rec["status"]}
    # A click goes to the thread of the file now open.
    scatter = next(s for s in overview.scatters.values() if len(s.points()))
    with qtbot.waitSignal(overview.thread_requested, timeout=30_000):
        overview._on_scatter_clicked(scatter, [scatter.points()[0]])
    assert studio_ctx.runner.wait_idle()
    assert window.current_thread_id == "long-run"
    for key in (Qt.Key.Key_Escape, "ctrl+w"):
        overview.show()
        overview.activateWindow()
        if key == "ctrl+w":
            qtbot.keyClick(overview, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
        else:
            qtbot.keyClick(overview, key)
        assert not overview.isVisible()


def test_overview_refreshes_with_the_database(studio, fixture_db, studio_ctx, qtbot):
    from tests.ui.mastra_edits import append_message

    window, overview = _overview(studio, fixture_db, studio_ctx, qtbot)
    before = next(e for e in overview.entries if e.thread.id == "support-3").status.pending_tokens
    append_message(window.database_path, "support-3", "One more question for the observer. " * 10)
    window.refresh()
    assert studio_ctx.runner.wait_idle()
    qtbot.waitUntil(lambda: overview.finished, timeout=20000)
    assert studio_ctx.runner.wait_idle()
    after = next(e for e in overview.entries if e.thread.id == "support-3").status.pending_tokens
    assert after > before


def test_near_and_should_reflect_are_told_apart_in_the_list_bars_colours():
    # Hues (degrees): a state keeps its hue in the list (light fill), the pane (fill) and the Overview.
    from PySide6.QtGui import QColor

    from studio.ui.style import FILL, FILL_LIGHT

    def hue(colour) -> int:
        return QColor(colour).hsvHue()

    def apart(a, b) -> int:
        d = abs(hue(a) - hue(b)) % 360
        return min(d, 360 - d)

    assert STATES["near"][1] == FILL["near"].name() and STATES["reflect"][1] == FILL["over"].name()
    for state in ("ok", "near", "over"):
        assert apart(FILL[state], FILL_LIGHT[state]) <= 12, state   # same hue in the list and in the pane
    assert apart(STATES["near"][1], STATES["reflect"][1]) >= 30      # yellow vs red, not two oranges
    assert STATES["observe"][2] != STATES["reflect"][2]              # and the two "should" states by shape


def test_legend_covers_no_point(studio, fixture_db, studio_ctx, qtbot):
    """The legend sits where no point can be: outside the plot area, so its scene rect meets no scatter point.

    Points go anywhere in the view range (over-threshold threads in the top-right corner, where a corner
    legend sat), so the legend has to be beside the view box, not on it.
    """
    from PySide6.QtWidgets import QApplication

    _window, overview = _overview(studio, fixture_db, studio_ctx, qtbot)
    overview.show()
    qtbot.waitExposed(overview)
    QApplication.processEvents()
    legend = overview.legend
    assert legend.isVisible() and legend.items                         # there is a legend to place
    rect = legend.sceneBoundingRect()
    view_box = overview.plot.getPlotItem().getViewBox()
    assert not rect.intersects(view_box.sceneBoundingRect()), (rect, view_box.sceneBoundingRect())
    assert rect.right() <= overview.plot.sceneRect().right() + 1      # and inside the chart (exported with it)
    spots = [s for sc in (*overview.scatters.values(), overview.clipped) for s in sc.points()]
    assert spots
    for spot in spots:
        pos = view_box.mapViewToScene(spot.pos())
        assert not rect.contains(pos), (spot.pos(), rect)
        half = spot.size() / 2                                        # nor does it cover part of a marker
        assert not rect.intersects(type(rect)(pos.x() - half, pos.y() - half, 2 * half, 2 * half))
