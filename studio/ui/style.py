"""Colours, priority markers and the threshold-bar painter shared by delegates and widgets."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap

from studio.app import text as fmt
from studio.engine.observations import Priority

#: Fraction of a threshold from which a bar turns amber (near) before red (at or over).
NEAR_RATIO = 0.9

TRACK = QColor("#e5e7eb")
TRACK_BORDER = QColor("#cbd5e1")
TEXT = QColor("#111827")
MUTED = QColor("#6b7280")
OVER_TEXT = QColor("#7f1d1d")

# Saturated fills for the large bars, light fills for the small in-table bars (dark text on top).
# One hue per state everywhere (list, pane, Overview): blue below, yellow near, red at or over.
FILL = {"ok": QColor("#2563eb"), "near": QColor("#eab308"), "over": QColor("#dc2626")}
FILL_LIGHT = {"ok": QColor("#bfdbfe"), "near": QColor("#fde68a"), "over": QColor("#fca5a5")}

PRIORITY_COLOURS = {
    Priority.HIGH: QColor("#dc2626"),
    Priority.MEDIUM: QColor("#d97706"),
    Priority.LOW: QColor("#16a34a"),
    Priority.COMPLETED: QColor("#0d9488"),
}

DIFF_BACKGROUND = {"added": QColor("#dcfce7"), "removed": QColor("#fee2e2"), "kept": None}
DIFF_FOREGROUND = {"added": QColor("#14532d"), "removed": QColor("#7f1d1d"), "kept": QColor("#374151")}
DIFF_MARKER = {"added": "+", "removed": "-", "kept": " "}
LOSS_BACKGROUND = QColor("#fecaca")


def bar_state(value: int, threshold: int) -> str:
    """Return "ok", "near" (≥ NEAR_RATIO of the threshold) or "over" (at or over the threshold)."""
    if threshold and value >= threshold:
        return "over"
    if threshold and value >= NEAR_RATIO * threshold:
        return "near"
    return "ok"


@dataclass(frozen=True)
class BarValue:
    """What a threshold bar shows: VALUE tokens of THRESHOLD, or a placeholder while not yet known."""

    value: int | None = None
    threshold: int | None = None
    placeholder: str = fmt.ELLIPSIS

    @property
    def known(self) -> bool:
        """Return True when the exact figures are known."""
        return self.value is not None and self.threshold is not None

    @property
    def ratio(self) -> float:
        """Return value / threshold (0 when unknown)."""
        return self.value / self.threshold if self.known and self.threshold else 0.0

    @property
    def state(self) -> str:
        """Return "ok", "near" or "over"."""
        return bar_state(self.value, self.threshold) if self.known else "ok"

    @property
    def text(self) -> str:
        """Return "2,488 / 2,500 · 99%", or the placeholder."""
        return fmt.ratio_text(self.value, self.threshold) if self.known else self.placeholder

    @property
    def short_text(self) -> str:
        """Return "99%" (for a narrow cell), or the placeholder."""
        return f"{fmt.percent(self.value, self.threshold)}%" if self.known else self.placeholder


def paint_bar(painter: QPainter, rect: QRectF, bar: BarValue, *, light: bool, text: bool = True,
              buffered: int = 0, radius: float = 3.0, label: str | None = None,
              placeholder_colour: QColor | None = None) -> None:
    """Paint BAR into RECT: track, fill capped at 100%, BUFFERED tokens hatched, centred text.

    LABEL replaces the bar's text (a shorter form for a narrow cell); PLACEHOLDER_COLOUR replaces the
    muted grey of a placeholder ("no OM", "…"), which is drawn without a track (a selected row's text colour).
    """
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    if bar.known or not text:  # a placeholder ("no OM", "…") is shown as text alone
        painter.setPen(QPen(TRACK_BORDER, 1))
        painter.setBrush(TRACK)
        painter.drawRoundedRect(rect, radius, radius)
    if bar.known and bar.threshold:
        fill = QRectF(rect)
        fill.setWidth(rect.width() * min(1.0, bar.ratio))
        if fill.width() > 0.5:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush((FILL_LIGHT if light else FILL)[bar.state])
            painter.drawRoundedRect(fill, radius, radius)
        if buffered > 0:
            seg = QRectF(rect)
            seg.setWidth(rect.width() * min(1.0, buffered / bar.threshold, bar.ratio))
            painter.setBrush(QBrush(QColor(255, 255, 255, 150), Qt.BrushStyle.BDiagPattern))
            painter.drawRoundedRect(seg, radius, radius)
    if text:
        font = QFont(painter.font())
        if bar.known and bar.state == "over":
            font.setBold(True)
        painter.setFont(font)
        if bar.known:
            painter.setPen(OVER_TEXT if bar.state == "over" else TEXT)
        else:
            painter.setPen(placeholder_colour if placeholder_colour is not None else MUTED)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, bar.text if label is None else label)
    painter.restore()


@cache
def _priority_pixmap(priority: Priority, size: int) -> QPixmap:
    pm = QPixmap(size, size)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    colour = PRIORITY_COLOURS[priority]
    inset = size * 0.14
    circle = QRectF(inset, inset, size - 2 * inset, size - 2 * inset)
    if priority is Priority.COMPLETED:
        p.setPen(QPen(colour, size * 0.16, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
                      Qt.PenJoinStyle.RoundJoin))
        path = QPainterPath(QPointF(size * 0.2, size * 0.52))
        path.lineTo(QPointF(size * 0.42, size * 0.74))
        path.lineTo(QPointF(size * 0.82, size * 0.28))
        p.drawPath(path)
    else:
        p.setPen(QPen(colour.darker(130), 1))
        p.setBrush(colour)
        p.drawEllipse(circle)
    p.end()
    return pm


@cache
def priority_icon(priority: Priority | None) -> QIcon | None:
    """Return the coloured marker of PRIORITY (a dot; a tick for completed), or None."""
    if priority is None:
        return None
    icon = QIcon()
    for size in (12, 16, 24, 32):
        icon.addPixmap(_priority_pixmap(priority, size))
    return icon


def priority_colour(priority: Priority | None) -> QColor | None:
    """Return PRIORITY's colour, or None."""
    return PRIORITY_COLOURS.get(priority) if priority is not None else None


STYLE_SHEET = """
QGroupBox { font-weight: 600; border: 1px solid #d1d5db; border-radius: 6px; margin-top: 10px;
            padding: 8px 6px 6px 6px; }
QGroupBox::title { subcontrol-origin: margin; left: 8px; padding: 0 4px; color: #374151; }
QLabel[role="muted"] { color: #6b7280; }
QLabel[role="ok"] { color: #14532d; background: #dcfce7; border: 1px solid #86efac; border-radius: 4px;
                    padding: 4px 6px; }
QLabel[role="heading"] { font-size: 15px; font-weight: 600; color: #111827; }
QLabel[role="empty"] { color: #6b7280; font-size: 13px; }
QLabel[role="badge"] { border-radius: 8px; padding: 1px 8px; background: #e5e7eb; color: #374151; }
QLabel[role="badge-live"] { border-radius: 8px; padding: 1px 8px; background: #dbeafe; color: #1e3a8a; }
QLabel[role="badge-stale"] { border-radius: 8px; padding: 1px 8px; background: #fef3c7; color: #78350f; }
QLabel[role="loss"] { color: #7f1d1d; background: #fee2e2; border: 1px solid #fca5a5; border-radius: 4px;
                      padding: 4px 6px; }
QFrame[role="loss"] { background: #fee2e2; border: 1px solid #fca5a5; border-radius: 4px; }
QLabel[role="loss-head"] { color: #7f1d1d; font-weight: 600; background: transparent; border: none; }
QLabel[role="loss-body"] { color: #7f1d1d; background: #fee2e2; border: none; }
QFrame[role="loss"] QScrollArea, QFrame[role="loss"] QToolButton {
    background: transparent; border: none; color: #7f1d1d; }
QTableView, QTreeView, QListView { gridline-color: #e5e7eb; }
QHeaderView::section { padding: 3px 6px; }
"""
