"""Small windows (900×600, 640×420): bars stay visible, headings stay apart, the History diff keeps its height."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from studio.engine.diff import diff_logs
from studio.store import open_store
from studio.ui.models.threads import BAR_COLUMNS, SHORT_HEADERS, ThreadColumn
from tests.oracle_facts import status, threads

SUPPORT_THREADS = threads("support")

SIZES = [(900, 600), (640, 420)]


def open_small(studio, studio_ctx, path, size, **kwargs):
    window = studio()
    window.resize(*size)
    window._panes_placed = False          # placed for the new width on the next show, as on a first start
    window.hide()
    window.show()
    window.open_database(path, **kwargs)
    assert studio_ctx.runner.wait_idle()
    window.settle()
    return window


def x_range(widget, window) -> tuple[int, int]:
    left = widget.mapTo(window, QPoint(0, 0)).x()
    return left, left + widget.width()


@pytest.mark.parametrize("size", SIZES)
def test_bar_columns_stay_visible(studio, studio_ctx, fixture_db, size):
    window = open_small(studio, studio_ctx, fixture_db("support"), size, thread_id="support-1")
    assert (window.width(), window.height()) == size             # nothing forces a bigger window
    view = window.threads_view
    header = view.horizontalHeader()
    width = view.viewport().width()
    for col in BAR_COLUMNS:
        assert not header.isSectionHidden(col)
        left = header.sectionViewportPosition(col)
        assert left >= 0 and left + header.sectionSize(col) <= width, (col, left, header.sectionSize(col), width)
    assert view.horizontalScrollBar().maximum() == 0             # no scrolling needed to see the bars
    assert header.sectionSize(ThreadColumn.TITLE) >= 80          # the title got the stretch, and room
    assert window.thread_view.width() >= window.thread_view.minimumSizeHint().width()
    if size == (640, 420):
        assert window.thread_model.headerData(ThreadColumn.OBSERVATION, header.orientation()) == \
            SHORT_HEADERS[ThreadColumn.OBSERVATION]
        assert window.thread_list.visible_columns() == [ThreadColumn.TITLE, *BAR_COLUMNS]


def test_wide_window_shows_every_figure(studio, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    assert window.width() == 1400
    header = window.threads_view.horizontalHeader()
    assert ThreadColumn.LAST_ACTIVITY in window.thread_list.visible_columns()
    row = window.thread_model.row_of("support-1")
    text = window.thread_model.index(row, ThreadColumn.OBSERVATION).data()
    pending, threshold = status("support", "support-1")["pendingTokens"], status("support", "support-1")["threshold"]
    assert text == f"{pending:,} / {threshold:,} · {pending * 100 // threshold}%"
    assert header.sectionSize(ThreadColumn.OBSERVATION) >= window.fontMetrics().horizontalAdvance(text)
    assert "before" in window.thread_model.headerData(ThreadColumn.OBSERVATION, header.orientation())


@pytest.mark.parametrize("size", SIZES)
def test_headings_do_not_run_together(studio, studio_ctx, fixture_db, size):
    window = open_small(studio, studio_ctx, fixture_db("support"), size, thread_id="support-1")
    resources, threads = window.resources_heading, window.threads_heading
    fm = resources.fontMetrics()
    _, resources_right = x_range(resources, window)
    threads_left, _ = x_range(threads, window)
    assert threads_left - resources_right >= 6                    # a gap, not "Resources Threads (6)"
    shown = min(fm.horizontalAdvance(resources.text()), resources.contentsRect().width())
    text_gap = threads_left + threads.contentsRect().left() - (resources.mapTo(window, QPoint(0, 0)).x() + shown)
    assert text_gap >= 12, text_gap                               # the two headings read as two words
    assert threads.text() == f"Threads ({len(SUPPORT_THREADS)})"


@pytest.mark.parametrize("size", SIZES)
def test_history_diff_keeps_usable_height(studio, studio_ctx, fixture_db, size):
    window = open_small(studio, studio_ctx, fixture_db("support"), size, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    assert tab.losses.isVisible()                                 # the fixture's reflection drops 🔴 lines
    row = tab.diff_view.verticalHeader().defaultSectionSize()
    header = tab.diff_view.horizontalHeader().height()
    assert tab.diff_view.viewport().height() >= 2 * row, tab.diff_view.viewport().height()
    assert tab.diff_view.height() >= header + 2 * row
    # The callout is a short scrolling list (or just its heading), never taller than the diff.
    assert tab.losses.height() <= max(tab.diff_view.height(), 120)
    assert tab.losses.scroll.maximumHeight() < 120


def test_losses_callout_scrolls_and_collapses(studio, studio_ctx, fixture_db, qtbot):
    path = fixture_db("support")
    with open_store(path) as store:
        history = store.om_history("thread:support-1")
    lost = len(diff_logs(history[1].active_observations, history[0].active_observations).high_priority_losses)
    window = studio(path, thread_id="support-1", tab="history")
    tab = window.thread_view.history_tab
    losses = tab.losses
    assert losses.is_expanded() and losses.scroll.isVisible()
    lines = losses.body.text().split("\n")
    assert len(lines) == 1 + lost                                 # the sentence, then every lost observation
    assert losses.scroll.height() < losses.body.sizeHint().height()   # more than fits: it scrolls
    assert losses.scroll.verticalScrollBar().maximum() > 0
    before = tab.diff_view.height()
    qtbot.mouseClick(losses.toggle, Qt.MouseButton.LeftButton)
    assert not losses.is_expanded() and not losses.scroll.isVisible() and losses.user_choice is False
    window.settle()
    assert tab.diff_view.height() > before                        # the diff got the room back
    assert f"{lost} high-priority observations removed" in losses.text()


def test_short_history_tab_starts_with_the_callout_collapsed(studio, studio_ctx, fixture_db):
    window = open_small(studio, studio_ctx, fixture_db("support"), (640, 420), thread_id="support-1", tab="history")
    losses = window.thread_view.history_tab.losses
    assert losses.isVisible() and not losses.is_expanded()
    assert losses.toggle.text() == "Show"


def test_cut_titles_have_full_tooltips(studio, studio_ctx, fixture_db):
    listed = threads("support")
    longest = max(listed, key=lambda t: len(listed[t]["title"] or ""))   # the title most likely cut
    full = listed[longest]["title"]
    window = open_small(studio, studio_ctx, fixture_db("support"), (640, 420), thread_id=longest)
    model = window.thread_model
    row = model.row_of(longest)
    tip = model.index(row, ThreadColumn.TITLE).data(Qt.ItemDataRole.ToolTipRole)
    assert full in tip and longest in tip
    title = window.thread_view.title
    assert title.text() == full                                   # the full text is kept
    assert full in title.toolTip() and f"thread {longest}" in title.toolTip()
    title.resize(60, title.height())
    assert title.is_elided()
    assert not title.grab().isNull()                              # paints the elided text
