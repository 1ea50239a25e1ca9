"""The studio's windows carry our own icon (resources/icons, the same files the .desktop entry installs)."""

from __future__ import annotations

from PySide6.QtCore import QSize

from studio.paths import ICONS
from studio.ui.app import application


def test_windows_use_the_studio_icon(qtbot):
    app = application()
    sizes = app.windowIcon().availableSizes()
    for n in (16, 32, 48, 64, 128, 256):
        assert QSize(n, n) in sizes
        assert (ICONS / f"memory-studio-{n}.png").is_file()
    assert (ICONS / "memory-studio.svg").read_text(encoding="utf-8").lstrip().startswith("<?xml")
    assert app.desktopFileName() == "memory-studio"
    image = app.windowIcon().pixmap(64, 64).toImage()
    # the drawn icon: transparent corner, opaque dark-blue middle of the background
    assert image.pixelColor(0, 0).alpha() == 0
    centre = image.pixelColor(32, 56)
    assert centre.alpha() == 255 and centre.blue() > centre.red()
