"""Fixtures of the Qt tests: a studio window on a private fixture copy, waited on and closed after each test."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QSettings
from PySide6.QtWidgets import QApplication

from studio.ui.app import application
from studio.ui.context import AppContext
from studio.ui.tasks import TaskRunner
from studio.ui.widgets.main_window import MainWindow


@pytest.fixture(autouse=True, scope="session")
def _studio_application(qapp):
    """Every Qt test runs on the studio's application set-up (style, GUI-thread-only garbage collection)."""
    application()


@pytest.fixture
def studio_ctx(qapp, tmp_path):
    """An AppContext with its own settings file and TaskRunner; shut down after the test."""
    application()  # the studio's style and names on pytest-qt's QApplication
    ctx = AppContext(settings=QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat),
                     runner=TaskRunner())
    yield ctx
    ctx.runner.wait_idle()
    ctx.runner.shutdown()


@pytest.fixture
def studio(qtbot, studio_ctx):
    """Factory: studio(path) -> a shown MainWindow with PATH opened and every task done."""
    windows: list[MainWindow] = []

    def make(path=None, **kwargs) -> MainWindow:
        window = MainWindow(studio_ctx)
        qtbot.addWidget(window)
        window.resize(1400, 900)
        window.show()
        windows.append(window)
        if path is not None:
            window.open_database(path, **kwargs)
            assert studio_ctx.runner.wait_idle(), "tasks did not finish"
        return window

    yield make
    studio_ctx.runner.wait_idle()
    for window in windows:
        if window.error_box is not None:
            window.error_box.close()
        window.close()
        window.deleteLater()
    QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)

