"""The studio's Health: badges from a background doctor scan, the Health tab, the Health window, navigation."""

from __future__ import annotations

import html
import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from studio.engine.doctor import run_doctor
from studio.engine.observations import classify
from studio.store import open_store
from studio.ui.models.threads import ThreadColumn
from studio.ui.widgets import health as health_mod
from studio.ui.widgets.health import badge_text
from studio.ui.widgets.health_views import COLUMNS, SEVERITY_COLOURS
from tests.conftest import load_oracle
from tests.engine.doctor_db import reflect_to_dates
from tests.mastra_facts import HIGH_PRIORITY_LINE, lookup_keys, om_rows, oracle_thread, timestamp_ties


def wait_scan(runner, window, timeout_s: float = 60.0) -> bool:
    """Wait until the window's health scan has finished (it yields between batches, so the runner idles
    between them): the runner's tasks and the scan's own timers. False after TIMEOUT_S (a hang guard)."""
    import time

    from PySide6.QtWidgets import QApplication

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not runner.wait_idle(max(0.1, end - time.monotonic())):
            return False
        if not window.health.scan.running:
            return True
        QApplication.processEvents()
        time.sleep(0.01)
    return False


def doctor(path) -> list[dict]:
    with open_store(path) as store:
        return run_doctor(store).to_json()["findings"]


def test_scan_counts_every_thread_as_batches_land(studio, studio_ctx, fixture_db, monkeypatch):
    monkeypatch.setattr("studio.app.open_results.RESULTS_CHUNK", 2)
    path = fixture_db("support")
    window = studio()
    landed = []
    window.health.scan.batch_landed.connect(lambda batch, done, total: landed.append((done, total)))
    window.open_database(path)
    assert wait_scan(studio_ctx.runner, window)
    # the store-wide findings first (their task is queued before the first results batch), then six
    # threads, two per batch, counts shown as each lands
    assert landed == [(0, 6), (2, 6), (4, 6), (6, 6)]
    expected = doctor(path)
    assert sorted(map(str, window.health.scan.findings)) == sorted(map(str, expected))
    lost = sum(1 for f in expected if f["thread_id"] == "support-1" and f["severity"] == "warning")
    assert lost > 0 and badge_text(window.health.scan.thread_counts("support-1")) == (str(lost), "warning")
    assert badge_text(window.health.scan.thread_counts("support-2")) is None   # no finding at all


def test_badge_is_painted_beside_the_title(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"))
    assert wait_scan(studio_ctx.runner, window)
    view = window.thread_list.view
    assert view.itemDelegateForColumn(ThreadColumn.TITLE) is window.health.badges
    row = window.thread_model.row_of("support-1")
    rect = view.visualRect(window.thread_model.index(row, ThreadColumn.TITLE))
    image = view.viewport().grab().toImage()
    amber = SEVERITY_COLOURS["warning"]
    pixels = [QColor(image.pixel(x, rect.center().y())) for x in range(rect.right() - 30, rect.right())]
    assert any(abs(p.red() - amber.red()) < 8 and abs(p.green() - amber.green()) < 8 for p in pixels)
    row2 = window.thread_model.row_of("support-2")
    rect2 = view.visualRect(window.thread_model.index(row2, ThreadColumn.TITLE))
    pixels2 = [QColor(image.pixel(x, rect2.center().y())) for x in range(rect2.right() - 30, rect2.right())]
    assert not any(abs(p.red() - amber.red()) < 8 and abs(p.green() - amber.green()) < 8 for p in pixels2)


def test_health_tab_lists_the_threads_findings(studio, studio_ctx, fixture_db):
    path = fixture_db("support")
    tied = list(timestamp_ties(path))   # a thread with messages sharing a millisecond has a finding
    assert tied, "no thread of support.db has a timestamp tie: no thread with a certain finding"
    thread_id = tied[-1]
    window = studio(path)
    assert window.select_thread(thread_id)
    assert wait_scan(studio_ctx.runner, window)
    assert window.thread_view.health_tab.pane.model.rowCount() == 0   # hidden tab: not checked yet
    window.thread_view.set_tab("health")
    assert wait_scan(studio_ctx.runner, window)
    tab = window.thread_view.health_tab
    want = [f for f in doctor(path) if f["thread_id"] == thread_id]
    assert tab.thread_id == thread_id and tab.pane.model.rowCount() == len(want) > 0
    assert sorted(tab.pane.model.finding(r)["summary"] for r in range(len(want))) == sorted(f["summary"] for f in want)


@pytest.mark.parametrize(("name", "thread_id"), [("buffered", "long-run"), ("support", "support-1")])
@pytest.mark.parametrize("size", [(1024, 700), (1400, 900)])
def test_lost_lines_are_one_row_that_starts_with_the_first_lost_observation(studio, studio_ctx, fixture_db, qtbot,
                                                                            name, thread_id, size):
    # Every lost-high-priority row read "High-priority observation of generation 0 ke…", one row per line
    # (16–36 rows on a Mastra-written file). Now a thread's lost lines are one row whose summary starts
    # with the first lost observation's own text (what tells it from another thread's row; the column
    # elides the rest), the evidence lists every line, the tooltip holds the whole summary as plain
    # text. The lost lines: a reflection that kept only the date headers of the thread's current log.
    path = fixture_db(name)
    high = reflect_to_dates(path, f"thread:{thread_id}")
    window = studio(path)
    window.resize(*size)
    assert window.select_thread(thread_id)
    window.thread_view.set_tab("health")
    assert wait_scan(studio_ctx.runner, window)
    tab = window.thread_view.health_tab
    qtbot.waitUntil(lambda: tab.pane.model.rowCount() > 0, timeout=30_000)
    model = tab.pane.model
    column = COLUMNS.index("Summary")
    lost = [r for r in range(model.rowCount()) if model.finding(r)["check"] == "lost-high-priority"]
    assert len(lost) == 1 and len(high) > 1
    finding = model.finding(lost[0])
    lines = [ln["line"] for ln in finding["evidence"]["lines"]]
    assert set(lines) >= set(high)
    assert model.index(lost[0], column).data().startswith(classify(lines[0]).text[:20])
    assert html.unescape(re.sub(r"<[^>]+>", "", model.index(lost[0], column).data(Qt.ItemDataRole.ToolTipRole))
                         ).count(finding["summary"]) == 1


def test_health_tab_has_no_empty_band_above_its_counts(studio, studio_ctx, fixture_db):
    # An empty status line sat above "0 errors · N warnings" as a blank band; it shows only while checking
    window = studio(fixture_db("support"))
    assert window.select_thread("support-1")
    window.thread_view.set_tab("health")
    assert wait_scan(studio_ctx.runner, window)
    tab = window.thread_view.health_tab
    assert tab.pane.model.rowCount() > 0
    assert not tab.status.isVisible()
    counts = tab.pane.summary
    assert counts.mapTo(tab, counts.rect().topLeft()).y() <= tab.pane.layout().contentsMargins().top() + 8


def test_health_window_opens_messages_and_generations(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("support")
    tied = list(timestamp_ties(path))   # a message finding: a thread whose messages share a millisecond
    assert tied, "no thread of support.db has a timestamp tie: no message finding to open"
    # a generation finding in another thread: a reflection there that kept only the date headers
    other = next((key for key in lookup_keys(path) if key.startswith("thread:") and key[len("thread:"):] != tied[0]
                  and any(HIGH_PRIORITY_LINE.match(ln) for row in om_rows(path, key)[-1:]
                          for ln in row["activeObservations"].splitlines())), None)
    assert other, "no other thread of support.db has a 🔴 observation to lose"
    reflect_to_dates(path, other)
    window = studio(path)
    assert wait_scan(studio_ctx.runner, window)
    hw = window.health.show_window()
    model = hw.pane.model
    assert model.rowCount() == len(doctor(path))
    rows = [model.finding(r) for r in range(model.rowCount())]
    tie = next(f for f in rows if f["check"] == "timestamp-ties" and f["thread_id"] == tied[0])
    assert window.health.open_finding(tie)
    assert wait_scan(studio_ctx.runner, window)
    qtbot.waitUntil(lambda: window.thread_view.messages_tab._selected_id == tie["message_ids"][0], timeout=30_000)
    assert window.current_thread_id == tied[0] and window.thread_view.current_tab() == "messages"
    lost = next(f for f in rows if f["check"] == "lost-high-priority" and f["lookup_key"] == other)
    assert window.health.open_finding(lost)
    assert wait_scan(studio_ctx.runner, window)
    history = window.thread_view.history_tab
    qtbot.waitUntil(lambda: history.select_record(lost["record_id"]) and window.thread_view.current_tab() == "history",
                    timeout=30_000)
    assert window.current_thread_id == other[len("thread:"):]


def test_view_menu_has_health_with_a_shortcut(studio):
    window = studio()
    assert window.health.action.shortcut().toString() == "Ctrl+Shift+H"
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert window.health.action in view_menu.actions()
    assert health_mod.SCAN_KEY == "doctor-scan"


def test_a_pending_generation_select_dies_with_the_window(studio_ctx, fixture_db, qtbot, monkeypatch):
    """Opening a generation finding retries the History selection every SELECT_EVERY_MS until the list has
    loaded; a window closed and destroyed meanwhile must take the retry with it (CI once saw the retry
    call into the deleted generation table: 'Internal C++ object (RowTableView) already deleted')."""
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from studio.ui.widgets.main_window import MainWindow

    path = fixture_db("support")
    reflect_to_dates(path, "thread:support-1")   # a generation finding for certain: its 🔴 lines lost
    window = MainWindow(studio_ctx)   # not the `studio` fixture's: this test destroys its window itself
    window.resize(1400, 900)
    window.show()
    window.open_database(path)
    assert studio_ctx.runner.wait_idle()
    assert wait_scan(studio_ctx.runner, window)
    lost = next(f for f in doctor(path) if f["check"] == "lost-high-priority" and f["thread_id"] == "support-1")
    calls = []
    history_type = type(window.thread_view.history_tab)
    monkeypatch.setattr(history_type, "select_record", lambda self, record_id: calls.append(record_id) or False)
    assert window.health.open_finding(lost)
    assert calls == [lost["record_id"]]           # first try: not listed yet, so a retry is scheduled
    window.close()
    window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    qtbot.wait(3 * health_mod.SELECT_EVERY_MS)     # an uncaught error in a timer fails this test (pytest-qt)
    assert calls == [lost["record_id"]]           # the retry went with the window


def test_badged_title_keeps_its_full_title_tooltip(studio, studio_ctx, fixture_db, qtbot):
    """The badge narrows the title's cell: its tooltip still gives the whole title (plain text), then the Health
    line."""
    from PySide6.QtCore import QEvent
    from PySide6.QtGui import QHelpEvent
    from PySide6.QtWidgets import QStyleOptionViewItem, QToolTip

    path = fixture_db("support")
    tied = list(timestamp_ties(path))   # a thread with a certain finding, so a badge
    assert tied, "no thread of support.db has a timestamp tie: no thread with a certain badge"
    thread_id = tied[0]
    title = html.escape(oracle_thread(load_oracle("support"), thread_id)["title"])   # Mastra's title, as shown
    window = studio(path)
    assert wait_scan(studio_ctx.runner, window)
    view = window.thread_list.view
    index = window.thread_model.index(window.thread_model.row_of(thread_id), ThreadColumn.TITLE)
    assert window.health.badges._badge(index) is not None                 # the thread carries a badge
    rect = view.visualRect(index)
    event = QHelpEvent(QEvent.Type.ToolTip, rect.center(), view.viewport().mapToGlobal(rect.center()))
    option = QStyleOptionViewItem()
    option.rect = rect
    assert window.health.badges.helpEvent(event, view, option, index)
    qtbot.waitUntil(QToolTip.isVisible, timeout=30_000)
    tip = QToolTip.text()
    QToolTip.hideText()
    assert title in tip and f"thread {thread_id}" in tip and "Health: " in tip
    assert tip.index(title) < tip.index("Health: ")
    assert tip.startswith("<p style='white-space:pre-wrap'>")            # shown literally, never as markup
