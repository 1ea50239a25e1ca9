"""A 1024×700 screen: the thread view keeps its room, columns come back by choice, windows and dialogs stay on it.

Issue 26 item 7: panes restored from a wider session left the thread list ~540 px and the thread view
~290 px; a hidden Last activity column had no way back; Health and Overview opened partly below the
screen's edge; a refused clone squashed the dialog's inputs to half height.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication

import studio.ui.screen as screen
from studio.ui.models.threads import ThreadColumn
from studio.ui.widgets.main_window import DETAIL_SHARE

SMALL = QRect(0, 0, 1024, 700)


def test_panes_restored_from_a_wide_session_give_the_thread_view_its_share(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    window.splitter.setSizes([160, 540, 700])            # a 1400 px session's panes, as restoreState gives them
    QApplication.processEvents()
    window.resize(1024, 700)
    QApplication.processEvents()
    sizes = window.splitter.sizes()
    assert sizes[2] >= int(window.splitter.width() * DETAIL_SHARE) - 2, sizes
    assert sizes[1] < 540


def test_the_thread_list_header_chooses_its_columns(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"))
    pane = window.thread_list
    pane.fit_columns(300)                                   # a narrow pane: every optional column hides
    assert ThreadColumn.LAST_ACTIVITY not in pane.visible_columns()
    menu = pane.column_menu()
    names = [a.text() for a in menu.actions() if a.isCheckable()]
    assert "Last activity" in names
    last = next(a for a in menu.actions() if a.text() == "Last activity")
    assert not last.isChecked()
    last.setChecked(True)                                   # the user wants it back, whatever the width
    assert ThreadColumn.LAST_ACTIVITY in pane.visible_columns()
    pane.fit_columns(300)
    assert ThreadColumn.LAST_ACTIVITY in pane.visible_columns()
    assert pane.view.horizontalHeader().contextMenuPolicy() == Qt.ContextMenuPolicy.CustomContextMenu
    pane.reset_columns()
    pane.fit_columns(300)
    assert ThreadColumn.LAST_ACTIVITY not in pane.visible_columns()


def test_health_and_overview_open_within_a_1024x700_screen(studio, studio_ctx, fixture_db, monkeypatch):
    monkeypatch.setattr(screen, "available_area", lambda _widget=None: SMALL)
    window = studio(fixture_db("support"))
    window.resize(1024, 700)
    for shown in (window.health.show_window(), window.dialogs.show_overview()):
        studio_ctx.runner.wait_idle()
        frame = shown.frameGeometry()
        assert SMALL.contains(frame), (type(shown).__name__, frame)
        shown.close()


def test_a_refused_clone_keeps_its_inputs_full_height(studio, studio_ctx, fixture_db, qtbot):
    window = studio(fixture_db("history"), thread_id="hist-1")
    actions = window.history_actions
    dialog = actions.clone_thread()
    qtbot.waitExposed(dialog)
    heights = {e: e.height() for e in (dialog.new_id, dialog.title_edit, dialog.limit)}
    dialog.new_id.setText("hist-2")                       # taken: refused
    with qtbot.waitSignal(actions.failed, timeout=15000):
        dialog.accept()
    studio_ctx.runner.wait_idle()
    QApplication.processEvents()
    assert dialog.refusal.isVisible()
    for edit, height in heights.items():
        assert edit.height() >= min(height, edit.sizeHint().height()), (edit, edit.height(), height)
        assert edit.height() >= edit.sizeHint().height()
    dialog.reject()


def test_the_write_dialogs_open_within_a_1024x700_screen(studio, studio_ctx, fixture_db, monkeypatch):
    """Reflect / Observe open at 1040×760 where there is room; on a 1024×700 screen they fit it, buttons and all."""
    from studio.ui.widgets.activate_dialog import ActivateDialog
    from studio.ui.widgets.observe_dialog import ObserveDialog
    from studio.ui.widgets.reflect_dialog import ReflectDialog
    from tests.ui.write_dialogs import open_write_dialog

    monkeypatch.setattr(screen, "available_area", lambda _widget=None: SMALL)
    window = studio(fixture_db("buffered"), thread_id="long-run")
    window.resize(1024, 700)
    for action, attribute, cls in (("reflect_action", "reflect_dialog", ReflectDialog),
                                   ("observe_action", "observe_dialog", ObserveDialog),
                                   ("activate_action", "observe_dialog", ActivateDialog)):
        dialog = open_write_dialog(window, action, attribute, cls)
        QApplication.processEvents()
        frame = dialog.frameGeometry()
        assert SMALL.contains(frame), (cls.__name__, frame)
        dialog.reject()
