"""A write session (one per studio window or CLI run): every write saves its row backup; a whole-file copy on request.

Every write — to a file, PostgreSQL or a libSQL server — saves the rows it changes as a JSON row
backup before its COMMIT (`studio.store.write.row_backup`); the session routes those files to its
folder and remembers the last one per store (`backup_for`), which Thread ▸ Undo Last Write and
`memory-studio undo` restore. A copy of the whole file (SQLite online backup, verified:
`studio.store.write.file_backup`) is made only when asked (`full_backup=True`: `--full-backup`),
once per session and file, before the first write; a write that is refused or fails removes the
copy it made, so none is left behind for a write that did not happen.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from studio.errors import StoreError, WriteRefused
from studio.store.target import FILE, file_target, redact_url, target_kind
from studio.store.write import reflection, repair, threads
from studio.store.write.file_backup import backup_database
from studio.store.write.row_backup import BackupSink, backup_sink
from studio.store.write.tx import WRITE_LOCK_WAIT_MS, lock_wait_message

__all__ = ["DESTRUCTIVE_WRITES", "WriteSession"]

#: The writes a session routes (row backup) and, with full_backup, copies the file before.
DESTRUCTIVE_WRITES = ("commit_reflection", "revert_to_generation", "clone_thread", "delete_messages", "clear_thread",
                      "delete_thread", "update_thread", "update_working_memory")


class WriteSession:
    """Writes to users' databases, each with its row backup; with FULL_BACKUP also one verified file copy per file.

    BACKUP_DIR: where row backups (default: the data folder) and file copies (default: beside each
    database) go. BACKUP: the file-copy function (`studio.store.write.file_backup.backup_database(path,
    folder=…)`), replaceable in tests. Thread-safe. The write methods take the same arguments as the
    functions of `studio.store.writes` and return what they return; when a backup fails, StoreError
    is raised and nothing is written.
    """

    def __init__(self, *, backup_dir: str | os.PathLike[str] | None = None,
                 backup: Callable[..., Path] = backup_database, full_backup: bool = False):
        self.backup_dir = Path(backup_dir) if backup_dir is not None else None
        self.full_backup = full_backup
        self._backup = backup
        self._backups: dict[Path | str, Path] = {}       # the last row backup per store
        self._copies: dict[Path, Path] = {}              # the whole-file copy per file (full_backup)
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: str | os.PathLike[str]) -> Path | str:
        if target_kind(path) != FILE:
            return redact_url(os.fspath(path))
        return Path(os.path.realpath(file_target(path).path))

    @contextmanager
    def routed(self, path: str | os.PathLike[str]):
        """Context for one write of PATH: its row backup goes to this session's folder and becomes
        `backup_for(PATH)`; with full_backup, the file is copied first (once per session), and a copy
        made for this write is removed again when the write raises (refused or failed)."""
        made_now = self.copy_once(path)
        sink = BackupSink(folder=self.backup_dir)
        try:
            with backup_sink(sink):
                yield
        except BaseException:
            if made_now is not None:
                with self._lock:
                    self._copies.pop(self._key(path), None)
                made_now.unlink(missing_ok=True)
            raise
        finally:
            if sink.made:
                with self._lock:
                    self._backups[self._key(path)] = Path(sink.made[-1])

    @property
    def backups(self) -> dict[Path | str, Path]:
        """Return {database path (or redacted server URL): the row backup of the session's last write to it}."""
        with self._lock:
            return dict(self._backups)

    def backup_for(self, path: str | os.PathLike[str]) -> Path | None:
        """Return the row backup of this session's last write to PATH (what Undo Last Write restores), or None."""
        with self._lock:
            return self._backups.get(self._key(path))

    def copy_for(self, path: str | os.PathLike[str]) -> Path | None:
        """Return the whole-file copy this session made of the file PATH (full_backup), or None."""
        with self._lock:
            return self._copies.get(self._key(path)) if target_kind(path) == FILE else None

    def copy_once(self, path: str | os.PathLike[str]) -> Path | None:
        """With full_backup, copy the file PATH unless this session did; return the copy made now, else None.

        Raises WriteRefused("busy") when another process kept the file locked for the whole
        WRITE_LOCK_WAIT_MS (the bound every write shares), StoreError on any other failure.
        """
        if not self.full_backup or target_kind(path) != FILE:
            return None
        key = self._key(path)
        with self._lock:
            if key in self._copies:
                return None
            try:
                made = self._backup(key, folder=self.backup_dir) if self.backup_dir is not None else self._backup(key)
            except StoreError as exc:
                text = str(exc).lower()
                if not isinstance(exc, WriteRefused) and ("locked" in text or "busy" in text):
                    raise WriteRefused("busy", lock_wait_message(str(key), WRITE_LOCK_WAIT_MS)
                                       + " (The backup made before the first write could not read it.)") from exc
                raise
            self._copies[key] = Path(made)
            return self._copies[key]

    def commit_reflection(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """Route the row backup (and the file copy, if asked), then `writes.commit_reflection(path, **kwargs)`.

        A reflection identical to the current generation is refused (WriteRefused "unchanged") before the backup.
        """
        reflection.check_reflection_changes(path, **kwargs)
        with self.routed(path):
            return reflection.commit_reflection(path, **kwargs)

    def revert_to_generation(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """Route the row backup (and the file copy, if asked), then `writes.revert_to_generation(path, **kwargs)`."""
        with self.routed(path):
            return reflection.revert_to_generation(path, **kwargs)

    def repair_overtaken_writes(self, path: str | os.PathLike[str], **kwargs: Any) -> dict | None:
        """Route the row backup (it follows a commit of the session), then `repair_overtaken_writes`."""
        with self.routed(path):
            return repair.repair_overtaken_writes(path, **kwargs)

    def clone_thread(self, path: str | os.PathLike[str], source_thread_id: str, **kwargs: Any) -> dict:
        """Route the row backup (and the file copy, if asked), then `writes.clone_thread(path, source_thread_id, …)`.

        A missing source thread or a taken new id is refused (WriteRefused) before the backup of a file.
        """
        if target_kind(path) == FILE:
            threads.check_clone_ids(path, source_thread_id, kwargs.get("new_thread_id"))
        with self.routed(path):
            return threads.clone_thread(path, source_thread_id, **kwargs)

    def delete_messages(self, path: str | os.PathLike[str], ids, **kwargs: Any) -> int:
        """Route the row backup (and the file copy, if asked), then `writes.delete_messages(path, ids, **kwargs)`."""
        with self.routed(path):
            return threads.delete_messages(path, ids, **kwargs)

    def clear_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> int:
        """Route the row backup (and the file copy, if asked), then `writes.clear_thread(path, thread_id, **kwargs)`."""
        with self.routed(path):
            return threads.clear_thread(path, thread_id, **kwargs)

    def _thread_write(self, path: str | os.PathLike[str], thread_id: str, write: Callable[[], Any]) -> Any:
        """Refuse a missing THREAD_ID of a file before anything is copied, then route the row backup (and the
        file copy, if asked) around WRITE()."""
        if target_kind(path) == FILE:
            threads.check_thread_exists(path, thread_id)
        with self.routed(path):
            return write()

    def delete_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> dict:
        """`writes.delete_thread(path, thread_id, …)` (Memory.deleteThread) with the row backup routed (and the file
        copy, if asked). A missing thread is refused (WriteRefused "not-found") before the copy of a file.
        """
        return self._thread_write(path, thread_id, lambda: threads.delete_thread(path, thread_id, **kwargs))

    def update_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> dict:
        """`writes.update_thread(path, thread_id, …)` (Memory.updateThread) with the row backup routed (and the file
        copy, if asked). A missing thread is refused (WriteRefused "not-found") before the copy of a file.
        """
        return self._thread_write(path, thread_id, lambda: threads.update_thread(path, thread_id, **kwargs))

    def update_working_memory(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """`writes.update_working_memory(path, …)` (Memory.updateWorkingMemory) with the row backup routed (and the
        file copy, if asked). A missing thread is refused before the copy of a file.
        """
        from studio.store.write.working_memory import update_working_memory

        return self._thread_write(path, kwargs.get("thread_id"), lambda: update_working_memory(path, **kwargs))

    def undo_write(self, path: str | os.PathLike[str], backup: str | os.PathLike[str] | None = None,
                   **kwargs: Any) -> dict:
        """Undo the last studio write to PATH (a file or a server store; or the one in BACKUP): `undo.undo_write`.

        Backups are looked for (and the undo's own saved) in this session's folder when it has one.
        """
        from studio.store.write.undo import undo_write

        result = undo_write(os.fspath(path), backup, folder=self.backup_dir, **kwargs)
        if result.get("undo_backup"):
            with self._lock:
                self._backups[self._key(path)] = Path(result["undo_backup"])
        return result
