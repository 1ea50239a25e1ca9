"""One `Interaction` per window (studio.ui.interaction.QtInteraction, held by its WindowContext): it tells the user
what failed, over the window, and asks the write protocol's questions over each dialog that writes. The other tests
replace it with tests/scripted_interaction.py."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSettings, Qt
from PySide6.QtWidgets import QApplication

from studio.ui.context import AppContext
from studio.ui.interaction import QtInteraction
from studio.ui.message_dialog import MessageDialog
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.activate_dialog import ActivateDialog
from studio.ui.widgets.main_window import MainWindow
from studio.ui.widgets.observe_dialog import ObserveDialog
from tests.ui.test_reflect_dialog import open_dialog
from tests.ui.test_revert import open_revert
from tests.ui.write_dialogs import open_write_dialog


def _asks_over(dialog, window) -> None:
    """DIALOG asks through WINDOW's interaction, with its boxes over DIALOG."""
    asks = dialog.interaction
    assert isinstance(asks, QtInteraction) and asks is not window.context.interaction
    assert asks.parent is dialog and asks.interactive == window.context.interaction.interactive
    assert dialog.protocol.interaction is asks


def test_the_window_and_each_write_dialog_ask_through_the_windows_interaction(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    interaction = window.context.interaction
    assert isinstance(interaction, QtInteraction) and interaction.parent is window and interaction.interactive
    for dialog in (open_dialog(window), open_write_dialog(window, "observe_action", "observe_dialog", ObserveDialog),
                   open_revert(window, studio_ctx, 1)):
        _asks_over(dialog, window)
        dialog.reject()
    buffered = studio(fixture_db("buffered"), thread_id="long-run")
    activate = open_write_dialog(buffered, "activate_action", "observe_dialog", ActivateDialog)
    _asks_over(activate, buffered)
    activate.reject()


def test_a_failure_is_a_plain_text_box_over_the_window_without_blocking(studio, fixture_db):
    window = studio(fixture_db("support"))
    window.report_error("Cannot open", "<b>not markup</b>")
    box = window.error_box
    assert isinstance(box, MessageDialog) and box.isVisible() and box.parent() is window
    assert box.textFormat() == Qt.TextFormat.PlainText and box.text() == "<b>not markup</b>"
    assert box.windowModality() == Qt.WindowModality.WindowModal and window.last_error == "<b>not markup</b>"
    box.close()


def test_a_window_nobody_uses_shows_no_box(qapp, tmp_path):
    ctx = AppContext(settings=QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat), runner=TaskRunner(),
                     interactive=False)
    window = MainWindow(ctx)
    try:
        assert not window.context.interaction.interactive and not window.context.interactive
        window.report_error("Cannot open", "gone")
        assert window.error_box is None and window.last_error == "gone"
        assert window.context.interaction.report("Nothing was written", "busy") is None
    finally:
        window.close()
        window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
        ctx.runner.shutdown()
