"""A table-model base that answers a view's role requests for a cell in one Python call."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QModelRoleDataSpan, QPersistentModelIndex


class TableModel(QAbstractTableModel):
    """QAbstractTableModel whose `multiData` fills every requested role from `data` in one call.

    Item views ask for about seven roles per painted cell; Qt 6 asks them through `multiData`, so
    answering there costs one Python call per cell instead of seven. Each call from C++ into Python
    must take the GIL, which a busy worker thread holds for up to a switch interval (5 ms): fewer
    calls keep paints fast while background work runs. `flags` is left to Qt's default (enabled,
    selectable, never has children) for the same reason.
    """

    def multiData(self, index: QModelIndex | QPersistentModelIndex, roleDataSpan: QModelRoleDataSpan) -> None:
        data = self.data
        for i in range(len(roleDataSpan)):
            item = roleDataSpan[i]
            item.setData(data(index, item.role()))
