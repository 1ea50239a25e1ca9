"""Help ▸ Keyboard Shortcuts: every shortcut of the studio in a small read-only table."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

#: Keys the views handle themselves (no menu action), after the menus' shortcuts.
VIEW_KEYS = [
    ("Tab / Shift+Tab", "Move between the panes: resources → threads → thread view"),
    ("↑ / ↓, Page Up / Page Down", "Move in a list"),
    ("Home / End", "First / last row of the thread or message list (End loads the remaining messages)"),
]


def shortcut_rows(actions: list[tuple[QAction, str]], help_action: QAction) -> list[tuple[str, str]]:
    """Return (keys, what they do) for ACTIONS [(action, description)], the views' keys, then HELP_ACTION."""
    def keys(action: QAction) -> str:
        return action.shortcut().toString(QKeySequence.SequenceFormat.NativeText)

    return ([(keys(a), what) for a, what in actions] + VIEW_KEYS
            + [(keys(help_action), "Show this list of shortcuts")])


class ShortcutsDialog(QDialog):
    """List SHORTCUTS [(keys, what they do)] as plain text."""

    def __init__(self, shortcuts: list[tuple[str, str]], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.table = QTableWidget(len(shortcuts), 2)
        self.table.setHorizontalHeaderLabels(["Keys", "Action"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.setShowGrid(False)
        self.table.setTabKeyNavigation(False)
        for row, (keys, what) in enumerate(shortcuts):
            self.table.setItem(row, 0, QTableWidgetItem(keys))
            self.table.setItem(row, 1, QTableWidgetItem(what))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(520, 420)

    def rows(self) -> list[tuple[str, str]]:
        """Return the (keys, action) rows shown."""
        return [(self.table.item(r, 0).text(), self.table.item(r, 1).text()) for r in range(self.table.rowCount())]
