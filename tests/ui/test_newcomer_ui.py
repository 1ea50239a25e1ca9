"""What a newcomer trips on in the studio's first minutes: window size, Connect's words, headers, the empty window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSize


@pytest.mark.parametrize("screen,expected", [((1024, 700), (1016, 652)), ((1920, 1080), (1400, 900)),
                                             ((1366, 768), (1358, 720))])
def test_the_first_window_fits_the_screen(screen, expected):
    """Before: 1400x900 on every screen, so on a 1024x700 one the status bar and right half were off-screen."""
    from studio.ui.widgets.main_window import default_window_size

    assert default_window_size(QSize(*screen)) == QSize(*expected)
    assert default_window_size(None) == QSize(1400, 900)


def test_a_new_window_is_no_larger_than_its_screen(studio_ctx, qtbot):
    from studio.ui.widgets.main_window import MainWindow

    window = MainWindow(studio_ctx)
    qtbot.addWidget(window)
    free = window.screen().availableGeometry().size()
    assert window.width() <= free.width() and window.height() <= free.height()


def test_connect_no_longer_says_the_studio_only_reads(studio_ctx, qtbot):
    from studio.ui.widgets.connect_dialog import INTRO

    assert "only reads" not in INTRO and "File ▸ Open" not in INTRO
    assert "MongoDB" in INTRO and "confirm" in INTRO


@pytest.mark.parametrize("width", [500, 1000])
def test_the_health_headers_are_whole(qtbot, width):
    """Before: the Severity column was 56-64 px, and its header read "Severi…"."""
    from studio.ui.widgets.health_views import COLUMNS, FindingsPane

    pane = FindingsPane()
    qtbot.addWidget(pane)
    pane.resize(width, 400)
    pane.show()   # the widths hold from construction on and after every resize: no wait decides them
    header = pane.view.horizontalHeader()
    text = header.fontMetrics().horizontalAdvance(COLUMNS[0])
    assert header.sectionSize(0) >= text + 2 * header.style().pixelMetric(header.style().PixelMetric.PM_HeaderMargin)


def test_the_empty_window_names_connect_and_server_urls():
    from studio.ui.widgets.thread_view import NO_DATABASE

    for word in ("File ▸ Open…", "File ▸ Connect…", "postgresql://", "libsql://", "mongodb://"):
        assert word in NO_DATABASE


def _shown_at_1024(studio_ctx, qtbot, fixture_db, tab: str):
    from studio.ui.widgets.main_window import MainWindow

    window = MainWindow(studio_ctx)
    qtbot.addWidget(window)
    window.resize(1016, 652)   # what a 1024x700 screen gives the window (test_the_first_window_fits_the_screen)
    window.show()
    window.open_database(str(fixture_db("support")), thread_id="support-1", tab=tab)
    assert studio_ctx.runner.wait_idle()
    window.settle()   # pending events and layout processed: the columns and tab bars have their widths
    return window


def test_thread_titles_are_cut_in_the_middle_and_whole_in_the_tooltip(studio_ctx, qtbot, fixture_db):
    """Before: "Thread supp…" twice in a row (support-2 and support-4 looked alike)."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QStyleOptionViewItem

    from studio.ui.models.threads import ThreadColumn

    window = _shown_at_1024(studio_ctx, qtbot, fixture_db, "observations")
    view = window.thread_list.view
    model = view.model()
    titles = {}
    for row in range(model.rowCount()):
        index = model.index(row, ThreadColumn.TITLE)
        option = QStyleOptionViewItem()
        view.itemDelegateForColumn(ThreadColumn.TITLE).initStyleOption(option, index)
        assert option.textElideMode == Qt.TextElideMode.ElideMiddle
        title = index.data(Qt.ItemDataRole.DisplayRole)
        assert title.split("\n")[0] in index.data(Qt.ItemDataRole.ToolTipRole)
        room = view.columnWidth(ThreadColumn.TITLE) - 8
        shown = option.fontMetrics.elidedText(title, option.textElideMode, room)
        titles[shown] = title
    assert "Thread support-2" in titles.values() and "Thread support-4" in titles.values()
    assert len(titles) == model.rowCount()   # no two rows read alike


def test_every_context_part_tab_is_visible_at_1024x700(studio_ctx, qtbot, fixture_db):
    window = _shown_at_1024(studio_ctx, qtbot, fixture_db, "context")
    parts = window.thread_view.context_view.parts
    bar = parts.tabBar()
    assert parts.isVisible() and parts.count() >= 4
    for i in range(parts.count()):
        assert bar.tabRect(i).right() <= bar.width(), parts.tabText(i)
        assert "…" not in bar.tabText(i)


def test_the_health_summary_counts_in_words():
    """Before: "0 errors · 1 warnings · 1 info" on the sample's Tax filing thread."""
    from studio.ui.widgets.health_views import summary_text

    assert summary_text({"error": 0, "warning": 1, "info": 1}) == "0 errors · 1 warning · 1 info"
    assert summary_text({"error": 1, "warning": 2, "info": 0}) == "1 error · 2 warnings · 0 info"
