"""A write session (one per studio window or CLI run): a backup before its first destructive write per file.

On a PostgreSQL store or a libSQL server there is no file to copy: every write saves the rows it changes as a JSON row
backup before its COMMIT (`studio.store.write.row_backup`); the session routes those files to its folder and remembers
the last one per store (`backup_for`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from studio.errors import StoreError, WriteRefused
from studio.store.target import file_target, redact_url
from studio.store.write import reflection, repair, threads
from studio.store.write.file_backup import backup_database
from studio.store.write.row_backup import BackupSink, backup_sink, is_row_backup_target
from studio.store.write.tx import WRITE_LOCK_WAIT_MS, lock_wait_message

__all__ = ["DESTRUCTIVE_WRITES", "WriteSession"]

#: The writes a session backs up before. delete_messages and clear_thread remove rows;
#: commit_reflection and revert_to_generation overwrite the thread's current task / suggested
#: response and the previous generation's flags; clone_thread only adds rows, but it is the first
#: write many users make, and issue #4 asks for the backup before it too. So: every write.
DESTRUCTIVE_WRITES = ("commit_reflection", "revert_to_generation", "clone_thread", "delete_messages", "clear_thread",
                      "delete_thread", "update_thread", "update_working_memory")


class WriteSession:
    """Writes to users' databases with one verified backup per file, taken before the session's first write.

    BACKUP_DIR: where backups go (default: beside each database). BACKUP: the backup function
    (`studio.store.write.file_backup.backup_database(path, folder=…)`), replaceable in tests. Thread-safe.
    The write methods take the same arguments as the functions of `studio.store.writes` and
    return what they return; when the backup fails, StoreError is raised and nothing is written.
    """

    def __init__(self, *, backup_dir: str | os.PathLike[str] | None = None,
                 backup: Callable[..., Path] = backup_database):
        self.backup_dir = Path(backup_dir) if backup_dir is not None else None
        self._backup = backup
        self._backups: dict[Path, Path] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: str | os.PathLike[str]) -> Path | str:
        if is_row_backup_target(path):
            return redact_url(os.fspath(path))
        return Path(os.path.realpath(file_target(path).path))

    @contextmanager
    def routed(self, path: str | os.PathLike[str]):
        """Context for one write of PATH made outside these methods (observe, activate): on a server store the
        row backup its transaction saves goes to this session's folder and becomes `backup_for(PATH)`."""
        if not is_row_backup_target(path):
            yield
            return
        sink = BackupSink(folder=self.backup_dir)
        try:
            with backup_sink(sink):
                yield
        finally:
            if sink.made:
                with self._lock:
                    self._backups[self._key(path)] = Path(sink.made[-1])

    @property
    def backups(self) -> dict[Path | str, Path]:
        """Return {database path (or redacted server URL): backup path} for the backups this session made
        (server stores: the row backup of the last write)."""
        with self._lock:
            return dict(self._backups)

    def backup_for(self, path: str | os.PathLike[str]) -> Path | None:
        """Return the backup this session made of PATH, or None."""
        with self._lock:
            return self._backups.get(self._key(path))

    def before_destructive_write(self, path: str | os.PathLike[str]) -> Path:
        """Back up PATH unless this session already did; return the backup's path.

        Raises WriteRefused("busy") when another process kept the file locked for the whole
        WRITE_LOCK_WAIT_MS (the bound every write shares), StoreError on any other failure.
        On a server store (PostgreSQL, libSQL server) nothing is done here (None): each write saves its own row backup.
        """
        if is_row_backup_target(path):
            return None
        key = self._key(path)
        with self._lock:
            done = self._backups.get(key)
            if done is not None:
                return done
            # a unique name in the folder, chosen when the copy is ready (two writes in one second)
            try:
                made = self._backup(key, folder=self.backup_dir) if self.backup_dir is not None else self._backup(key)
            except StoreError as exc:
                text = str(exc).lower()
                if not isinstance(exc, WriteRefused) and ("locked" in text or "busy" in text):
                    raise WriteRefused("busy", lock_wait_message(str(key), WRITE_LOCK_WAIT_MS)
                                       + " (The backup made before the first write could not read it.)") from exc
                raise
            self._backups[key] = Path(made)
            return self._backups[key]

    def commit_reflection(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.commit_reflection(path, **kwargs)`.

        A reflection identical to the current generation is refused (WriteRefused "unchanged") before the backup.
        """
        reflection.check_reflection_changes(path, **kwargs)
        self.before_destructive_write(path)
        with self.routed(path):
            return reflection.commit_reflection(path, **kwargs)

    def revert_to_generation(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.revert_to_generation(path, **kwargs)`."""
        self.before_destructive_write(path)
        with self.routed(path):
            return reflection.revert_to_generation(path, **kwargs)

    def repair_overtaken_writes(self, path: str | os.PathLike[str], **kwargs: Any) -> dict | None:
        """Back up PATH once (it follows a commit of the session, so normally done), then repair_overtaken_writes."""
        self.before_destructive_write(path)
        with self.routed(path):
            return repair.repair_overtaken_writes(path, **kwargs)

    def clone_thread(self, path: str | os.PathLike[str], source_thread_id: str, **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.clone_thread(path, source_thread_id, **kwargs)`.

        A missing source thread or a taken new id is refused (WriteRefused) before the backup of a file.
        """
        if not is_row_backup_target(path):
            threads.check_clone_ids(path, source_thread_id, kwargs.get("new_thread_id"))
        self.before_destructive_write(path)
        with self.routed(path):
            return threads.clone_thread(path, source_thread_id, **kwargs)

    def delete_messages(self, path: str | os.PathLike[str], ids, **kwargs: Any) -> int:
        """Back up PATH once, then `writes.delete_messages(path, ids, **kwargs)`."""
        self.before_destructive_write(path)
        with self.routed(path):
            return threads.delete_messages(path, ids, **kwargs)

    def clear_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> int:
        """Back up PATH once, then `writes.clear_thread(path, thread_id, **kwargs)`."""
        self.before_destructive_write(path)
        with self.routed(path):
            return threads.clear_thread(path, thread_id, **kwargs)

    def delete_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.delete_thread(path, thread_id, **kwargs)` (Memory.deleteThread).

        A missing thread is refused (WriteRefused "not-found") before the backup of a file.
        """
        if not is_row_backup_target(path):
            threads.check_thread_exists(path, thread_id)
        self.before_destructive_write(path)
        with self.routed(path):
            return threads.delete_thread(path, thread_id, **kwargs)

    def update_thread(self, path: str | os.PathLike[str], thread_id: str, **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.update_thread(path, thread_id, **kwargs)` (Memory.updateThread).

        A missing thread is refused (WriteRefused "not-found") before the backup of a file.
        """
        if not is_row_backup_target(path):
            threads.check_thread_exists(path, thread_id)
        self.before_destructive_write(path)
        with self.routed(path):
            return threads.update_thread(path, thread_id, **kwargs)

    def update_working_memory(self, path: str | os.PathLike[str], **kwargs: Any) -> dict:
        """Back up PATH once, then `writes.update_working_memory(path, **kwargs)` (Memory.updateWorkingMemory).

        A missing thread is refused (WriteRefused "not-found") before the backup of a file.
        """
        from studio.store.write.working_memory import update_working_memory

        if not is_row_backup_target(path):
            threads.check_thread_exists(path, kwargs.get("thread_id"))
        self.before_destructive_write(path)
        with self.routed(path):
            return update_working_memory(path, **kwargs)

    def undo_write(self, path: str | os.PathLike[str], backup: str | os.PathLike[str] | None = None,
                   **kwargs: Any) -> dict:
        """Undo the last studio write to the server store PATH (or the one in BACKUP): `undo.undo_write`.

        Backups are looked for (and the undo's own saved) in this session's folder when it has one.
        """
        from studio.store.write.undo import undo_write

        result = undo_write(os.fspath(path), backup, folder=self.backup_dir, **kwargs)
        if result.get("undo_backup"):
            with self._lock:
                self._backups[self._key(path)] = Path(result["undo_backup"])
        return result
