"""Item delegates: the small threshold bars of the thread list, painted (no widget per row)."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRectF, QSize
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from studio.ui.models.roles import BAR_ROLE
from studio.ui.style import BarValue, paint_bar


class BarDelegate(QStyledItemDelegate):
    """Paint an index's BAR_ROLE value as a bar: fill = ratio capped at 100%, red at or over threshold."""

    def paint(self, painter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        bar = index.data(BAR_ROLE)
        if not isinstance(bar, BarValue):
            super().paint(painter, option, index)
            return
        # Draw the selection/hover background the style would draw, without the text.
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = option.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        rect = QRectF(option.rect).adjusted(4, 3, -4, -3)
        paint_bar(painter, rect, bar, light=True)

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        width = option.fontMetrics.horizontalAdvance("00,000 / 00,000 · 100%") + 20
        return QSize(max(base.width(), width), max(base.height(), option.fontMetrics.height() + 8))
