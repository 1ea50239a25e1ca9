"""The resource list on the left: "All resources" first, then every resource with its thread count."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from studio.app.text import plain_tooltip
from studio.ui.models.base import TableModel
from studio.ui.models.roles import ID_ROLE

ALL_RESOURCES = "All resources"
#: The last row: OM records whose thread was deleted (Mastra #16621), under a key no resource id has.
ORPHANS = "\x00orphans"
ORPHANS_TITLE = "Records without a thread"
HEADERS = ["Resource", "Threads"]


class ResourceListModel(TableModel):
    """Rows: (None, every thread) for "All resources", then (resource id, its thread count)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._rows: list[tuple[str | None, int]] = []

    def set_resources(self, resources: list[tuple[str, int]], orphans: int = 0) -> None:
        """Replace the rows with RESOURCES [(resource id, thread count)], then ORPHANS (records without a thread)."""
        self.beginResetModel()
        total = sum(n for _, n in resources)
        self._rows = [(None, total), *resources] if resources or total else []
        if orphans:
            self._rows.append((ORPHANS, orphans))
        self.endResetModel()

    def clear(self) -> None:
        """Remove every row."""
        self.set_resources([])

    def row_of(self, resource_id: str | None) -> int:
        """Return the row of RESOURCE_ID (None: "All resources"), or -1."""
        for i, (rid, _) in enumerate(self._rows):
            if rid == resource_id:
                return i
        return -1

    def resource_id(self, row: int) -> str | None:
        """Return the resource id of ROW (None for "All resources")."""
        return self._rows[row][0] if 0 <= row < len(self._rows) else None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return HEADERS[section] if 0 <= section < len(HEADERS) else None
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self._rows)):
            return None
        rid, count = self._rows[index.row()]
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if col == 0:
                return ALL_RESOURCES if rid is None else ORPHANS_TITLE if rid == ORPHANS else rid
            return f"{count:,}"
        if role == Qt.ItemDataRole.ToolTipRole:
            if rid == ORPHANS:
                return plain_tooltip(f"{ORPHANS_TITLE}: {count:,} Observational Memory record"
                                     f"{'s' if count != 1 else ''} whose thread was deleted (Mastra #16621 leaves "
                                     "them behind). They are listed with the resource they belong to as well.")
            return plain_tooltip(f"{ALL_RESOURCES} ({count:,} threads)" if rid is None
                                 else f"Resource {rid}: {count:,} threads")
        if role == Qt.ItemDataRole.FontRole and rid in (None, ORPHANS):
            font = QFont()
            font.setBold(rid is None)
            font.setItalic(rid == ORPHANS)
            return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col == 1:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == ID_ROLE:
            return rid
        return None
