"""Guard against the PySide6 6.12.0 + Python 3.11 bug that drops a reference to None per void call.

With that release CPython aborts ("deallocating None") after a few thousand Qt calls, i.e. within
seconds of using the studio; pyproject.toml excludes it. This test fails if such a build returns.
"""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QWidget


def test_void_qt_calls_keep_none_and_bool_refcounts(qtbot):
    widget = QWidget()
    qtbot.addWidget(widget)
    before = (sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False))
    for _ in range(500):
        widget.setWindowTitle("x")
        widget.resize(100, 100)
        widget.isVisible()
    after = (sys.getrefcount(None), sys.getrefcount(True), sys.getrefcount(False))
    # A few references may come and go with caches; a leak would show as -1000 or worse.
    assert all(a - b > -50 for a, b in zip(after, before, strict=True)), (before, after)
