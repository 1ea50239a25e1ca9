"""Moving around: filters that hide the selected thread, Tab between panes, Home/End, Ctrl+1/2/3, Ctrl+F, Help."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from studio.ui.models.roles import ID_ROLE
from studio.ui.widgets.thread_view import NO_THREAD
from tests.conftest import load_oracle
from tests.oracle_facts import threads


def title_word(fixture: str, thread_id: str) -> str | None:
    """Return a word of THREAD_ID's title that no other thread of FIXTURE has in its title or id (None if none).

    The thread list's filter matches a title or an id, case-insensitively.
    """
    listed = threads(fixture)
    for word in (listed[thread_id]["title"] or "").split():
        w = word.casefold()
        if len(w) >= 4 and not any(w in (t["title"] or "").casefold() or w in tid.casefold()
                                   for tid, t in listed.items() if tid != thread_id):
            return word
    return None


def select_resource(window, resource_id):
    window.resources_view.setCurrentIndex(window.resource_model.index(window.resource_model.row_of(resource_id), 0))


def active(window, qtbot):
    """Make WINDOW the active window (shortcuts and focus need one)."""
    window.activateWindow()
    window.raise_()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window, timeout=30_000)
    return window


def test_resource_that_hides_the_thread_selects_its_first_thread(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    assert window.thread_view.thread_id == "support-1"
    select_resource(window, "user-bob")
    studio_ctx.runner.wait_idle()
    first = window.thread_model.index(0, 0).data(ID_ROLE)
    assert first in {"support-3", "support-4"}
    assert window.current_thread_id == first
    assert window.threads_view.currentIndex().row() == 0
    assert window.thread_view.thread_id == first                 # the old thread's detail is gone
    assert window.thread_view.title.text() == window.thread_model.thread_row(0).thread.title

    # A resource that still lists the thread keeps it.
    select_resource(window, None)
    studio_ctx.runner.wait_idle()
    assert window.current_thread_id == first and window.thread_view.thread_id == first


def test_title_filter_follows_and_empties(studio, studio_ctx, fixture_db):
    words = {tid: title_word("support", tid) for tid in threads("support") if tid != "support-1"}
    [(other, word), *_] = [(tid, w) for tid, w in sorted(words.items()) if w] or [(None, None)]
    assert word, "no support thread but support-1 has a title word of its own"
    window = studio(fixture_db("support"), thread_id="support-1")
    edit = window.thread_list.filter_edit
    edit.setText(word.upper())                                    # case-insensitive, title or id
    studio_ctx.runner.wait_idle()
    assert window.thread_model.rowCount() == 1
    assert window.current_thread_id == other == window.thread_view.thread_id
    assert window.threads_heading.text() == "Threads (1)"
    edit.setText("support-5")
    studio_ctx.runner.wait_idle()
    assert window.current_thread_id == "support-5"
    edit.setText("nothing like this")
    studio_ctx.runner.wait_idle()
    assert window.thread_model.rowCount() == 0
    assert window.current_thread_id is None and window.thread_view.detail is None
    assert window.thread_view._empty.text() == "No thread matches “nothing like this”."
    assert window.select_thread("support-2")                      # selecting a hidden thread clears the filter
    studio_ctx.runner.wait_idle()
    assert edit.text() == "" and window.thread_model.rowCount() == len(threads("support"))


def test_resource_without_threads_shows_select_a_thread(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    window.thread_model.set_resource_filter("nobody")
    window._follow_filter()
    assert window.current_thread_id is None
    assert window.thread_view._empty.text() == NO_THREAD


def test_tab_moves_between_panes(studio, fixture_db, qtbot):
    window = active(studio(fixture_db("support"), thread_id="support-1"), qtbot)
    for view in (window.resources_view, window.threads_view, window.thread_view.messages_tab.view):
        assert not view.tabKeyNavigation()
    window.resources_view.setFocus()
    qtbot.waitUntil(lambda: window.resources_view.hasFocus(), timeout=30_000)
    QTest.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is window.threads_view
    QTest.keyClick(window.threads_view, Qt.Key.Key_Tab)
    focused = QApplication.focusWidget()
    assert focused is not None and window.thread_view.isAncestorOf(focused)
    window.threads_view.setFocus()
    QTest.keyClick(window.threads_view, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert QApplication.focusWidget() is window.resources_view


def test_home_and_end_go_to_first_and_last_thread(studio, studio_ctx, fixture_db, qtbot):
    window = active(studio(fixture_db("support"), thread_id="support-2"), qtbot)
    model = window.thread_model
    model._page_size = 2                               # the list shows two threads until End fetches the rest
    window.thread_model.set_resource_filter("user-alice")
    window.thread_model.set_resource_filter(None)
    n = len(threads("support"))
    assert model.rowCount() == 2 and model.total_rows == n > 2
    view = window.threads_view
    view.setFocus()
    view.setCurrentIndex(model.index(1, 0))
    QTest.keyClick(view, Qt.Key.Key_End)
    assert model.rowCount() == n and view.currentIndex().row() == n - 1
    studio_ctx.runner.wait_idle()
    assert window.current_thread_id == model.visible_rows()[-1].thread.id
    QTest.keyClick(view, Qt.Key.Key_Home)
    assert view.currentIndex().row() == 0
    studio_ctx.runner.wait_idle()
    assert window.current_thread_id == model.visible_rows()[0].thread.id


def test_end_loads_messages_up_to_the_last(studio, studio_ctx, fixture_db, qtbot):
    window = studio(fixture_db("support"), thread_id="support-1", tab="messages")
    tab = window.thread_view.messages_tab
    tab.model._page_size = 10
    tab.set_thread("support-1")
    studio_ctx.runner.wait_idle()
    n = len(load_oracle("support")["threads"]["support-1"]["messages"])
    assert tab.model.rowCount() < n and tab.model.total == n        # pages of 10 (the view may ask for one more)
    tab.view.setFocus()
    QTest.keyClick(tab.view, Qt.Key.Key_End)
    assert tab.following_end
    qtbot.waitUntil(lambda: not tab.following_end and tab.model.rowCount() == n, timeout=10000)
    assert tab.view.currentIndex().row() == n - 1
    last = tab.model.message_row(n - 1).message
    assert last.id in tab.header.text()
    QTest.keyClick(tab.view, Qt.Key.Key_Home)
    assert tab.view.currentIndex().row() == 0


def test_ctrl_digits_switch_tabs_and_ctrl_f_filters(studio, fixture_db, qtbot):
    window = active(studio(fixture_db("support"), thread_id="support-1"), qtbot)
    window.threads_view.setFocus()
    for key, name in ((Qt.Key.Key_2, "history"), (Qt.Key.Key_3, "messages"), (Qt.Key.Key_1, "observations")):
        QTest.keyClick(window.threads_view, key, Qt.KeyboardModifier.ControlModifier)
        assert window.thread_view.current_tab() == name
    QTest.keyClick(window.threads_view, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert QApplication.focusWidget() is window.thread_list.filter_edit
    word = title_word("support", "support-1")
    assert word, "support-1's title has no word of its own"
    QTest.keyClicks(window.thread_list.filter_edit, word.lower())
    assert window.thread_model.rowCount() == 1
    assert window.current_thread_id == "support-1"


@pytest.mark.parametrize("shortcut", ["Ctrl+1", "Ctrl+2", "Ctrl+3", "Ctrl+F", "Home / End", "Tab / Shift+Tab", "F5"])
def test_help_lists_the_shortcuts(studio, fixture_db, shortcut):
    window = studio(fixture_db("tools"))
    window.shortcuts_action.trigger()
    dialog = window.shortcuts_dialog
    assert dialog is not None and dialog.isVisible()
    assert shortcut in [keys for keys, _ in dialog.rows()]
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles == ["&File", "&View", "&Thread", "&Help"]
    dialog.close()
