"""Helpers of the tests of the OM write dialogs (Reflect Now…, Observe Now…, Activate Buffered Chunks…)."""

from __future__ import annotations

import time

from PySide6.QtCore import QCoreApplication


def wait_until(predicate, timeout: float = 60.0) -> None:  # a hang guard, not a speed check
    """Process Qt events until PREDICATE() is true; fail after TIMEOUT seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        QCoreApplication.processEvents()
        time.sleep(0.005)


def open_write_dialog(window, action: str, attribute: str, cls):
    """Trigger WINDOW's dialogs' ACTION (e.g. "reflect_action"); return the dialog it opened once its first read ended.

    The dialog must be a visible CLS kept as WINDOW.dialogs.<ATTRIBUTE>; its `closed_with` is set to the
    dialog's result when it closes (absent while it is open).
    """
    dialogs = window.dialogs
    assert getattr(dialogs, action).isEnabled()
    getattr(dialogs, action).trigger()
    dialog = getattr(dialogs, attribute)
    assert isinstance(dialog, cls) and dialog.isVisible()
    dialog.finished.connect(lambda result: setattr(dialog, "closed_with", result))
    window.context.runner.wait_idle()
    return dialog
