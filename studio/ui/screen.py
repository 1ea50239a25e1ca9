"""Keep windows and dialogs on the screen: their size within the screen's available area, their place inside it.

A 1024×700 laptop screen is the smallest the studio is laid out for; a window or a dialog whose
content asks for more (a long path, a wide table) gets at most the available area (the screen less
the task bars) and scrolls inside it, so its buttons stay reachable.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

__all__ = ["DIALOG_SHARE", "SCREEN_SHARE", "available_area", "fit_size", "fit_within_screen"]

#: The share of the available area a dialog takes at most (the rest shows what it is over).
DIALOG_SHARE = 0.9
#: The share a secondary window (Health, Overview) takes at most: room left for its frame and title bar.
SCREEN_SHARE = 0.92


def available_area(widget: QWidget | None = None) -> QRect:
    """Return the available geometry (pixels, task bars excluded) of WIDGET's screen, else the primary screen's."""
    screen = widget.screen() if widget is not None else None
    if screen is None:
        screen = QGuiApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, 1024, 700)


def fit_size(size: QSize, area: QRect, share: float = DIALOG_SHARE) -> QSize:
    """Return SIZE shrunk to at most SHARE of AREA in each direction (never grown)."""
    return QSize(min(size.width(), int(area.width() * share)), min(size.height(), int(area.height() * share)))


def fit_within_screen(widget: QWidget, share: float = 1.0) -> None:
    """Shrink WIDGET to at most SHARE of its screen's available area and move it so that it lies inside it.

    Called before a top-level window (Health, Overview) is shown: a window larger than a 1024×700
    screen would open partly below the screen's edge, its bottom rows and buttons out of reach.
    """
    area = available_area(widget.parentWidget() or widget)
    size = fit_size(widget.size(), area, share)
    if size != widget.size():
        widget.resize(size)
    frame = widget.frameGeometry()
    x = min(max(frame.x(), area.left()), area.right() + 1 - frame.width())
    y = min(max(frame.y(), area.top()), area.bottom() + 1 - frame.height())
    if (x, y) != (frame.x(), frame.y()):
        widget.move(max(x, area.left()), max(y, area.top()))
