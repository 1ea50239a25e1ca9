"""Custom item data roles shared by the studio's models, views and delegates."""

from __future__ import annotations

from PySide6.QtCore import Qt

_USER = Qt.ItemDataRole.UserRole.value

#: The row's key: thread id, resource id (None for "All resources"), message id, record id.
ID_ROLE = _USER + 1
#: A `studio.ui.style.BarValue` for threshold-bar columns (painted by BarDelegate).
BAR_ROLE = _USER + 2
#: The value a column sorts by (numbers, ISO strings).
SORT_ROLE = _USER + 3
#: The stored text of a row, unabridged (message text, raw log line).
RAW_ROLE = _USER + 4
#: The row's record object (Thread, MessageRow, OMRecord, DiffRow, LogLine).
RECORD_ROLE = _USER + 5
