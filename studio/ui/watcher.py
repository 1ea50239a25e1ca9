"""Notice when another process writes to the open store: poll its fingerprint at a gentle interval.

Every backend answers `MemoryStore.fingerprint()` cheaply (a local file: SQLite's data_version and
two stat calls; PostgreSQL: the server's transaction snapshot, and counts only when it moved), so
one mechanism serves files and servers alike; no file-system watch is needed.
"""

from __future__ import annotations

import os

from PySide6.QtCore import QObject, QTimer, Signal

from studio.store.file_head import read_head

#: How often the open store is asked whether it changed (ms): gentle on a server, quick enough for a person.
POLL_MS = 2000


class DatabaseWatcher(QObject):
    """Emit `check_due` every INTERVAL_MS while a store is watched; the window then compares its fingerprint.

    `path` is the local database file (the window also checks that it is still a SQLite file), or
    None for a server store. Polling stops with `stop()` (window closed, another store opened).
    """

    check_due = Signal()

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = POLL_MS):
        super().__init__(parent)
        self._path: str | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check_due)

    @property
    def path(self) -> str | None:
        """Return the local database file watched (None: a server store, or nothing watched)."""
        return self._path

    @property
    def active(self) -> bool:
        """Return True while polling."""
        return self._timer.isActive()

    def watch(self, path: str | None) -> None:
        """Poll for changes of the store just opened; PATH: its local file, or None for a server store."""
        self._path = os.fspath(path) if path is not None else None
        self._timer.start()

    def stop(self) -> None:
        """Stop polling."""
        self._timer.stop()
        self._path = None


#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"


def file_problem(path: str) -> str | None:
    """Return why the database file at PATH can no longer be what the window shows, or None when it still can.

    "was deleted", "was truncated to 0 bytes", "was overwritten by a file that is not a SQLite database"
    (its first 16 bytes are not SQLite's header), or "cannot be read (…)". Reads at most 16 bytes.
    """
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return "was deleted"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if size == 0:
        return "was truncated to 0 bytes"
    try:
        head = read_head(path, len(SQLITE_HEADER))   # never a close of the file: see studio.store.file_head
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if head != SQLITE_HEADER:
        return "was overwritten by a file that is not a SQLite database"
    return None
