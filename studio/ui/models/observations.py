"""The active observation log as a tree: dates, then observations, then their indented sub-lines.

Message boundaries and unrecognised lines stay in place as rows of their own, so every stored
line is shown (as plain text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QFont

from studio.app import text as fmt
from studio.engine.observations import LogLine, ObservationLog
from studio.ui.models.roles import RAW_ROLE, RECORD_ROLE
from studio.ui.style import MUTED, priority_colour, priority_icon

UNDATED = "(before the first date)"


class LogColumn(IntEnum):
    """Columns of the log tree."""

    OBSERVATION = 0
    PRIORITY = 1
    TIME = 2
    LINE = 3


HEADERS = {LogColumn.OBSERVATION: "Observation", LogColumn.PRIORITY: "Priority",
           LogColumn.TIME: "Time", LogColumn.LINE: "Line"}


@dataclass(eq=False)
class _Node:
    kind: str                          # "date" | "observation" | "boundary" | "text"
    line: LogLine | None
    title: str = ""
    header_line: int | None = None     # date rows: line number of the `Date:` header
    repeated: bool = False             # date rows: an earlier header carries the same date
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)

    def add(self, child: _Node) -> _Node:
        child.parent = self
        self.children.append(child)
        return child

    def row(self) -> int:
        return self.parent.children.index(self) if self.parent is not None else 0


def _build(log: ObservationLog) -> _Node:
    root = _Node("root", None)
    seen: set[str] = set()
    for group in log.groups:
        date = root.add(_Node("date", None, title=group.date or UNDATED, header_line=group.header_line,
                              repeated=group.date in seen))
        if group.date is not None:
            seen.add(group.date)
        last_top: _Node | None = None
        for line in group.lines:
            if line.kind == "observation" and line.depth > 0 and last_top is not None:
                parent = last_top
                while parent.children and parent.children[-1].kind == "observation" \
                        and parent.children[-1].line.depth < line.depth:
                    parent = parent.children[-1]
                parent.add(_Node("observation", line))
                continue
            node = date.add(_Node(line.kind, line))
            last_top = node if line.kind == "observation" else None
    return root


def _walk(node: _Node):
    for child in node.children:
        yield child
        yield from _walk(child)


def date_row_text(title: str, repeated: bool, observations: int, has_lines: bool) -> str:
    """Return the text of a date row: the date, "(continued)" when its header repeats an earlier
    one, and how many observation lines (sub-lines included) it holds, or that it holds none."""
    head = f"{title} (continued)" if repeated else title
    if observations:
        return f"{head}  ·  {observations} observation{'s' if observations != 1 else ''}"
    return f"{head}  ·  {'no observations' if not has_lines else 'no observation lines'}"


class ObservationLogModel(QAbstractItemModel):
    """A parsed ObservationLog: date rows at the top level, observations under them, sub-lines below."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._root = _Node("root", None)
        self._log: ObservationLog | None = None

    def set_log(self, log: ObservationLog | None) -> None:
        """Show LOG (None: empty)."""
        self.beginResetModel()
        self._log = log
        self._root = _build(log) if log is not None else _Node("root", None)
        self.endResetModel()

    @property
    def log(self) -> ObservationLog | None:
        """Return the log shown."""
        return self._log

    # -- Qt model API ----------------------------------------------------------------------

    def _node(self, index: QModelIndex | QPersistentModelIndex) -> _Node:
        return index.internalPointer() if index.isValid() else self._root

    def index(self, row: int, column: int, parent=QModelIndex()) -> QModelIndex:
        if column < 0 or column >= len(LogColumn) or row < 0:
            return QModelIndex()
        if parent.isValid() and parent.column() != 0:
            return QModelIndex()
        node = self._node(parent)
        if row >= len(node.children):
            return QModelIndex()
        return self.createIndex(row, column, node.children[row])

    def parent(self, index=QModelIndex()) -> QModelIndex:  # type: ignore[override]
        if not index.isValid():
            return QModelIndex()
        node: _Node = index.internalPointer()
        up = node.parent
        if up is None or up is self._root:
            return QModelIndex()
        return self.createIndex(up.row(), 0, up)

    def rowCount(self, parent=QModelIndex()) -> int:
        if parent.isValid() and parent.column() != 0:
            return 0
        return len(self._node(parent).children)

    def columnCount(self, parent=QModelIndex()) -> int:
        return len(LogColumn)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole \
                and 0 <= section < len(LogColumn):
            return HEADERS[LogColumn(section)]
        return None

    def flags(self, index):
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        node: _Node = index.internalPointer()
        col = LogColumn(index.column())
        line = node.line
        if node.kind == "date":
            return self._date_data(node, col, role)
        if role == Qt.ItemDataRole.DisplayRole:
            if col == LogColumn.OBSERVATION:
                if node.kind == "boundary":
                    return f"message boundary · {fmt.local_time(line.boundary_at, seconds=True)}"
                return line.text
            if col == LogColumn.PRIORITY:
                return line.priority.label if line.priority else ""
            if col == LogColumn.TIME:
                return line.time or ""
            return str(line.number)
        if role == Qt.ItemDataRole.DecorationRole and col == LogColumn.OBSERVATION:
            return priority_icon(line.priority)
        if role == Qt.ItemDataRole.ForegroundRole:
            if node.kind == "boundary" or col == LogColumn.LINE:
                return QBrush(MUTED)
            if col == LogColumn.PRIORITY and line.priority:
                return QBrush(priority_colour(line.priority))
        if role == Qt.ItemDataRole.FontRole:
            if node.kind == "boundary":
                font = QFont()
                font.setItalic(True)
                return font
            if col == LogColumn.PRIORITY and line.priority:
                font = QFont()
                font.setBold(True)
                return font
        if role == Qt.ItemDataRole.TextAlignmentRole and col == LogColumn.LINE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col == LogColumn.OBSERVATION:
            return fmt.plain_tooltip(line.raw)
        if role == RAW_ROLE:
            return line.raw
        if role == RECORD_ROLE:
            return line
        return None

    def _date_data(self, node: _Node, col: LogColumn, role: int):
        if role == Qt.ItemDataRole.DisplayRole:
            if col == LogColumn.OBSERVATION:
                return date_row_text(node.title, node.repeated,
                                     sum(1 for c in _walk(node) if c.kind == "observation"),
                                     bool(node.children))
            if col == LogColumn.LINE and node.header_line is not None:
                return str(node.header_line)
            return ""
        if role == Qt.ItemDataRole.FontRole and col == LogColumn.OBSERVATION:
            font = QFont()
            font.setBold(not node.repeated)
            font.setItalic(node.repeated)
            return font
        if role == Qt.ItemDataRole.ForegroundRole and (col != LogColumn.OBSERVATION or node.repeated):
            return QBrush(MUTED)
        if role == Qt.ItemDataRole.TextAlignmentRole and col == LogColumn.LINE:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole and col == LogColumn.OBSERVATION and node.repeated:
            return (f"The log repeats the header “Date: {node.title}” at line {node.header_line}: "
                    "Mastra starts each Observer output with a Date: line, so a date continues "
                    "after a message boundary.")
        if role == RAW_ROLE:
            return node.title
        return None
