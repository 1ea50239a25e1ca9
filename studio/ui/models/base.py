"""A table-model base that answers a view's role requests for a cell in one Python call."""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QModelRoleDataSpan, QPersistentModelIndex, Qt


class TableModel(QAbstractTableModel):
    """QAbstractTableModel whose `multiData` fills every requested role from `data` in one call.

    Item views ask for about seven roles per painted cell; Qt 6 asks them through `multiData`, so
    answering there costs one Python call per cell instead of seven. Each call from C++ into Python
    must take the GIL, which a busy worker thread holds for up to a switch interval (5 ms): fewer
    calls keep paints fast while background work runs. `flags` is left to Qt's default (enabled,
    selectable, never has children) for the same reason.
    """

    #: Subclasses with fixed columns set these: the column enum, its header texts and tooltips.
    COLUMNS: type[IntEnum] | None = None
    HEADERS: ClassVar[dict] = {}
    HEADER_TIPS: ClassVar[dict] = {}

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() or self.COLUMNS is None else len(self.COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if (self.COLUMNS is None or orientation != Qt.Orientation.Horizontal
                or not 0 <= section < len(self.COLUMNS)):
            return None
        col = self.COLUMNS(section)
        if role == Qt.ItemDataRole.DisplayRole:
            return self.HEADERS[col]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.HEADER_TIPS.get(col, self.HEADERS[col])
        return None

    def multiData(self, index: QModelIndex | QPersistentModelIndex, roleDataSpan: QModelRoleDataSpan) -> None:
        data = self.data
        for i in range(len(roleDataSpan)):
            item = roleDataSpan[i]
            item.setData(data(index, item.role()))
