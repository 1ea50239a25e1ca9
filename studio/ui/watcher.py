"""Notice when another process writes to the open database: watch the file, its -wal and its folder."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

#: Quiet time after the last file-system change before `files_changed` is emitted (ms).
DEBOUNCE_MS = 500


class DatabaseWatcher(QObject):
    """Emit `files_changed` once things settle after the database file or its -wal changed on disk.

    The folder is watched too: a writer creates and deletes the -wal (checkpoints), and a replaced
    file drops out of QFileSystemWatcher's list; both are re-added when they reappear.
    """

    files_changed = Signal()

    def __init__(self, parent: QObject | None = None, *, debounce_ms: int = DEBOUNCE_MS):
        super().__init__(parent)
        self._path: str | None = None
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._on_watcher_changed)
        self._watcher.directoryChanged.connect(self._on_watcher_changed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(debounce_ms)
        self._timer.timeout.connect(self.files_changed)

    @property
    def path(self) -> str | None:
        """Return the database watched, or None."""
        return self._path

    def watched(self) -> list[str]:
        """Return the paths currently watched."""
        return self._watcher.files() + self._watcher.directories()

    def watch(self, path: str) -> None:
        """Watch database PATH (and PATH-wal, and its folder) instead of the previous one."""
        self.stop()
        self._path = path
        self._add_missing()

    def stop(self) -> None:
        """Stop watching."""
        self._timer.stop()
        old = self.watched()
        if old:
            self._watcher.removePaths(old)
        self._path = None

    def _add_missing(self) -> None:
        if self._path is None:
            return
        wanted = [self._path, self._path + "-wal", str(Path(self._path).parent)]
        present = set(self.watched())
        missing = [p for p in wanted if p not in present and os.path.exists(p)]
        if missing:
            self._watcher.addPaths(missing)

    def _on_watcher_changed(self, _path: str) -> None:
        self._add_missing()
        self._timer.start()


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
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_HEADER))
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if head != SQLITE_HEADER:
        return "was overwritten by a file that is not a SQLite database"
    return None
