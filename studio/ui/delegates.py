"""Item delegates: the small threshold bars of the thread list, painted (no widget per row)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRectF, QSize
from PySide6.QtGui import QFont, QFontMetrics, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from studio.ui.models.roles import BAR_ROLE
from studio.ui.style import BarValue, paint_bar

#: Horizontal padding between a cell's edge and its bar (px).
BAR_PADDING = 4


def bar_label(bar: BarValue, option: QStyleOptionViewItem, width: float) -> str:
    """Return the bar's full text ("2,704 / 2,500 · 108%") when it fits WIDTH px, else its short form ("108%").

    Measured in the font the bar is painted in: an over-threshold bar's text is bold, hence wider.
    """
    if not bar.known:
        return bar.text
    if _metrics(option.font, bar.state == "over").horizontalAdvance(bar.text) + 6 <= width:
        return bar.text
    return bar.short_text


_METRICS: dict[tuple[str, bool], QFontMetrics] = {}


def _metrics(font: QFont, bold: bool) -> QFontMetrics:
    """Return the metrics of FONT (made BOLD or not), cached: a bar cell is painted often, its font rarely changes."""
    key = (font.key(), bold)
    metrics = _METRICS.get(key)
    if metrics is None:
        if len(_METRICS) > 32:
            _METRICS.clear()
        face = QFont(font)
        face.setBold(bold)
        metrics = _METRICS[key] = QFontMetrics(face)
    return metrics


def placeholder_colour(option: QStyleOptionViewItem):
    """Return the colour of a placeholder's text: the selection's text colour on a selected row, else None."""
    if not option.state & QStyle.StateFlag.State_Selected:
        return None
    group = QPalette.ColorGroup.Active if option.state & QStyle.StateFlag.State_Active else QPalette.ColorGroup.Inactive
    return option.palette.color(group, QPalette.ColorRole.HighlightedText)


class BarDelegate(QStyledItemDelegate):
    """Paint an index's BAR_ROLE value as a bar: fill = ratio capped at 100%, red at or over threshold."""

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        bar = index.data(BAR_ROLE)
        if not isinstance(bar, BarValue):
            super().paint(painter, option, index)
            return
        # Draw the selection/hover background the style would draw, without the text. Not through
        # initStyleOption: it asks the model for every role of the cell, and a bar cell has no text, icon,
        # font or background role to give (a tenth of the thread list's first paint).
        opt = QStyleOptionViewItem(option)
        opt.index = index
        opt.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect = QRectF(option.rect).adjusted(BAR_PADDING, 3, -BAR_PADDING, -3)
        paint_bar(painter, rect, bar, light=True, label=bar_label(bar, option, rect.width()),
                  placeholder_colour=placeholder_colour(option))

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        width = option.fontMetrics.horizontalAdvance("00,000 / 00,000 · 100%") + 20
        return QSize(max(base.width(), width), max(base.height(), option.fontMetrics.height() + 8))
